"""Bayesian logistic regression on topic proportions (Wang and Blei 2013, sec. 4.2, appendix C).

logistic.py      Laplace, delta-method, Jaakkola-Jordan and BBVI posteriors; predictive integrals
hierarchical.py  hierarchical logistic regression by variational EM (eqs. 22-23)
data.py          reading features / labels / groups; the design matrix (intercept, scaling)
model.py         the fitted classifier and its folder
cli.py           `topicscale classify fit | predict | info`
"""
