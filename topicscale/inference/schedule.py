"""Step-size schedules."""


def robbins_monro(t, tau, kappa):
    """rho_t = (tau + t)^(-kappa) (SVI paper, eq. 28); kappa in (0.5, 1] guarantees convergence."""
    return (tau + t) ** (-kappa)
