"""`topicscale classify fit | predict | info`: Bayesian logistic regression on topic proportions."""
import json
import math
import warnings
from pathlib import Path

import click

from ..errors import InputError, TopicscaleError
from ..options import SEED, SIZE_MAX, Count, Finite, given_flags


def _emit(as_json, payload, lines):
    if as_json:
        click.echo(json.dumps(payload))
    else:
        for line in lines:
            click.echo(line)


@click.group("classify")
def classify():
    """Bayesian logistic regression on topic proportions (or any dense features).

    \b
      topicscale infer model corpus -o theta.tsv
      topicscale classify fit theta.tsv labels.tsv -o clf [--groups groups.tsv] [--method laplace]
      topicscale classify predict clf new-theta.tsv --json

    FEATURES: `topicscale infer` output (TSV with a header and ids first, or .npy with FILE.ids.txt
    beside it) or any dense matrix (.tsv, .csv, .npy); `-` reads the text on standard input.
    LABELS and GROUPS: one value per line in row order, or `id<TAB>value` lines matched by id.
    Topic proportions (rows summing to one) get no intercept: all K columns are kept and theta_k
    is the log-odds of a document of topic k alone; other features get an intercept. Columns are
    scaled to unit standard deviation.
    """


def _refuse_unused_options(hierarchical, bbvi):
    """A usage error for options given on the command line that this fit would ignore: the
    hierarchical model's without --groups, black-box VI's without --method bbvi."""
    for applies, names, needs in ((hierarchical, ("phi0", "phi1", "nu_extra", "max_iter", "tol"), "--groups"),
                                  (bbvi, ("samples", "iterations", "step_size", "batch_size", "seed"),
                                   "--method bbvi")):
        given = [] if applies else given_flags(names)
        if given:
            raise click.UsageError(f"{', '.join(given)} {'go' if len(given) > 1 else 'goes'} with {needs} "
                                   "(this fit would ignore " + ("them)" if len(given) > 1 else "it)"))


@classify.command("fit")
@click.argument("features")
@click.argument("labels")
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Classifier folder to write.")
@click.option("--groups", help="One group per row: hierarchical logistic regression (variational EM).")
@click.option("--method", type=click.Choice(["laplace", "delta", "jj", "bbvi"]), default="laplace",
              show_default=True, help="Laplace VI, delta-method VI, Jaakkola-Jordan bound, black-box VI.")
@click.option("--prior-variance", type=Finite(0, min_open=True), default=1.0, show_default=True,
              help="theta ~ N(0, v I) (without --groups; with it, the initial Sigma_0).")
@click.option("--intercept", type=click.Choice(["auto", "yes", "no"]), default="auto", show_default=True,
              help="auto: none for topic proportions (rows summing to one), else one. yes on "
                   "proportions drops the last column.")
@click.option("--standardize/--no-standardize", default=True, show_default=True,
              help="Scale columns to unit standard deviation (and centre them when there is an intercept).")
@click.option("--phi0", type=Finite(0, min_open=True), help="Hierarchical: Wishart scale Phi_0 = phi0 I (eq. 22) [default: 0.1].")
@click.option("--phi1", type=Finite(0, min_open=True), help="Hierarchical: mu_0 ~ N(0, phi1 I) (eq. 23) [default: 1].")
@click.option("--nu-extra", type=Finite(), help="Hierarchical: Wishart degrees of freedom nu = p + this [default: 10].")
@click.option("--max-iter", type=Count(1, SIZE_MAX), help="Hierarchical: EM iterations cap [default: 100, BBVI 20].")
@click.option("--tol", type=Finite(0), default=1e-6, show_default=True,
              help="Hierarchical: stop when mu_0 and Sigma_0 change by less than this.")
@click.option("--samples", type=Count(2, SIZE_MAX), help="BBVI: samples of q per gradient [default: 32].")
@click.option("--iterations", type=Count(1, SIZE_MAX), help="BBVI: gradient steps [default: 3000].")
@click.option("--step-size", type=Finite(0, min_open=True), help="BBVI: AdaGrad eta [default: 0.2].")
@click.option("--batch-size", type=Count(0), help="BBVI: data points per minibatch, 0 for all [default: 256].")
@click.option("--seed", type=SEED, default=0, show_default=True, help="BBVI: seed (same seed, same classifier).")
@click.option("--force", is_flag=True, help="Replace an existing classifier in OUTPUT.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def fit_cmd(features, labels, output, groups, method, prior_variance, intercept, standardize, phi0, phi1,
            nu_extra, max_iter, tol, samples, iterations, step_size, batch_size, seed, force, as_json):
    """Fit q(theta) = N(mu, Sigma) of Bayesian logistic regression to FEATURES and LABELS (0/1).

    With --groups: one coefficient vector per group under a shared prior N(mu_0, Sigma_0), fitted
    by variational EM with the Wishart / normal hyperpriors of Wang and Blei (2013), eqs. 22-23.
    """
    from .data import labels_array, read_column, read_features
    from .model import FILENAME, Classifier
    _refuse_unused_options(hierarchical=bool(groups), bbvi=method == "bbvi")
    if (Path(output) / FILENAME).exists() and not force:
        raise TopicscaleError(f"{output} already holds a classifier; use --force to replace it")
    table = read_features(features)
    label_values, ignored = read_column(labels, table, "label")
    y = labels_array(label_values)
    group_values, ignored_groups = (read_column(groups, table, "group") if groups else (None, 0))
    bbvi_options = {"n_samples": samples, "n_iter": iterations, "step_size": step_size,
                    "batch_size": batch_size, "seed": seed} if method == "bbvi" else None
    if bbvi_options:
        bbvi_options = {k: v for k, v in bbvi_options.items() if v is not None}
    if nu_extra is not None and group_values is not None and len(set(group_values)) + nu_extra - 1 <= 0:
        raise click.BadParameter("must exceed 1 - (number of groups)", param_hint="--nu-extra")
    try:
        with warnings.catch_warnings():         # overflow on the way to a divergence, refused below
            warnings.simplefilter("ignore", RuntimeWarning)
            clf = Classifier.fit(table.values, table.columns, y, groups=group_values, method=method,
                                 prior_variance=prior_variance, intercept=intercept, standardize=standardize,
                                 phi0=phi0, phi1=phi1, nu_extra=nu_extra, max_iter=max_iter, tol=tol,
                                 bbvi_options=bbvi_options)
    except FloatingPointError as exc:
        raise TopicscaleError(f"the {method} fit failed numerically ({exc}); a smaller --prior-variance "
                              "(or --phi0, --phi1) keeps it stable") from None
    if not math.isfinite(clf.summary["train_log_likelihood"]):
        raise TopicscaleError(f"the {method} fit diverged (its coefficients are not finite), so nothing was "
                              f"written{'; a smaller --step-size keeps BBVI stable' if method == 'bbvi' else ''}")
    clf.save(output)
    s = clf.summary
    payload = {"output": output, "method": method, "hierarchical": clf.hierarchical,
               "covariates": clf.design.names, "intercept": clf.design.intercept,
               "ignored_labels": ignored, **s}
    if groups:
        payload["ignored_groups"] = ignored_groups
    lines = [f"wrote {output}: {method}{' hierarchical, ' + str(len(clf.groups)) + ' groups' if clf.hierarchical else ''}, "
             f"{s['rows']} rows x {s['n_covariates']} covariates ({'intercept' if clf.design.intercept else 'no intercept'})",
             f"training accuracy {s['train_accuracy']:.4f}, mean log predictive {s['train_log_likelihood']:.4f}"]
    if ignored:
        lines.append(f"ignored {ignored} labels whose ids are not among the features")
    if len(set(y.tolist())) == 1:
        click.echo(f"topicscale: warning: every label in {labels} is {int(y[0])}: nothing tells the classes "
                   "apart, so the classifier only learns that one class is common", err=True)
    if s.get("em_converged") is False:
        click.echo(f"topicscale: warning: the variational EM stopped at --max-iter {s['em_iterations']} before "
                   f"mu_0 and Sigma_0 changed by less than --tol {tol:g}; a larger --max-iter continues "
                   "further", err=True)
    _emit(as_json, payload, lines)


@classify.command("predict")
@click.argument("classifier", type=click.Path(exists=True, file_okay=False))
@click.argument("features")
@click.option("--groups", help="Hierarchical classifiers: one group per row (a new group gets the population prior).")
@click.option("--approximation", type=click.Choice(["quadrature", "probit"]), default="quadrature",
              show_default=True, help="How p(y=1|t) = E_q[sigma(theta^T t)] is integrated: numerically "
              "(to ~1e-10) or by MacKay's probit approximation.")
@click.option("--json", "as_json", is_flag=True, help='Print {"probabilities": [...], "ids": [...]} in row order.')
def predict_cmd(classifier, features, groups, approximation, as_json):
    """Predictive probabilities p(y=1 | t) of FEATURES' rows, integrated over q(theta).

    Plain output: `id<TAB>probability` lines (ids are 1-based row numbers when FEATURES has none).
    """
    from .data import read_column, read_features
    from .model import Classifier
    clf = Classifier.load(classifier)
    table = read_features(features)
    if len(table.columns) != len(clf.design.columns):
        raise InputError(features, None, f"{len(table.columns)} feature columns; the classifier was "
                         f"fitted on {len(clf.design.columns)}")
    group_values = None
    if clf.hierarchical:
        if not groups:
            raise TopicscaleError(f"{classifier} is hierarchical ({len(clf.groups)} groups): give --groups")
        group_values, _ = read_column(groups, table, "group")
    elif groups:
        raise TopicscaleError(f"{classifier} is not hierarchical: --groups does not apply")
    prob = clf.proba(table.values, group_values, approximation)
    ids = table.ids if table.ids is not None else [str(i + 1) for i in range(len(prob))]
    if as_json:
        payload = {"probabilities": [float(p) for p in prob]}
        if table.ids is not None:
            payload["ids"] = table.ids
        click.echo(json.dumps(payload))
    else:
        for i, p in zip(ids, prob):
            click.echo(f"{i}\t{float(p)!r}")      # all digits: 0.99999998 is not 1


@classify.command("info")
@click.argument("classifier", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def info_cmd(classifier, as_json):
    """Describe a classifier: method, covariates, coefficients' posterior means and sds."""
    import numpy as np
    from .model import Classifier
    clf = Classifier.load(classifier)
    d = clf.describe()
    names = clf.design.names
    coefs = {}
    keys = clf.groups if clf.hierarchical else ["all"]
    for key, q in zip(keys, clf.posteriors):
        coefs[key] = {n: [float(m), float(np.sqrt(v))] for n, m, v in zip(names, q.mean, np.diag(q.cov))}
    if clf.hierarchical:
        coefs["(population mean mu_0)"] = {n: [float(m), float(np.sqrt(v))]
                                           for n, m, v in zip(names, clf.mu0, np.diag(clf.sigma0))}
    d["coefficients"] = coefs
    if as_json:
        click.echo(json.dumps(d))
        return
    shown = lambda v: (", ".join(map(str, v)) if isinstance(v, list) else
                       ", ".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict) else v)
    for k, v in d.items():
        if k != "coefficients":
            click.echo(f"{k:<22} {shown(v)}")
    for key, table in coefs.items():
        click.echo(f"coefficients [{key}] (mean, sd):")
        for n, (m, s) in table.items():
            click.echo(f"  {n:<20} {m:+.4f}  {s:.4f}")
