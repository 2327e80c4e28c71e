"""Step-size schedules, and the count of global steps they are indexed by."""


def robbins_monro(t, tau, kappa):
    """rho_t = (tau + t)^(-kappa) (SVI paper, eq. 28); kappa in (0.5, 1] guarantees convergence."""
    return (tau + t) ** (-kappa)


def advance(model, n_docs, updated=True):
    """Count one minibatch of a global step: model.docs_seen += n_docs and, when the step changed
    the global parameters (`updated`), model.step += 1 (t of the schedules). The only code that
    changes either counter (tests/test_matrix.py checks every registered global step): batch VB
    and batch EM count every minibatch's documents but a step only when an epoch completes."""
    model.docs_seen += n_docs
    if updated:
        model.step += 1
