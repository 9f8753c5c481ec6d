"""The ``evidence_grid`` table of a ``[[models]]`` table (the language; the
grid tasks are :mod:`bsvm_scale.pipeline.run.evidence_grid`)."""

from __future__ import annotations

from .schema import GRID_KEYS, check_table

__all__ = ["GRID_DEFAULTS", "check_evidence_grid"]

#: The grid options left out of a pipeline file (:data:`~.schema.GRID_KEYS`).
GRID_DEFAULTS = {name: key.default for name, key in GRID_KEYS.items()}


def check_evidence_grid(table, kind, settings, fix_from, where, report):
    """Validate a model's ``evidence_grid`` table; returns it with defaults, or None.

    Parameters
    ----------
    table : dict or None
        The ``evidence_grid`` table of a ``[[models]]`` table (None: absent;
        a value of another type is left to the caller's type check).
    kind : str
        The model kind; only ``btsvc`` takes a grid.
    settings : dict
        The model's estimator settings (an ARD model has no scalar ``kappa``).
    fix_from : dict or None
        The model's ``fix_from`` table (a model without evidence search has no
        optimum to centre the grid on).
    where : str
        Prefix of the messages, e.g. ``"models[0]"``.
    report : callable
        Called with one message per problem found.

    Returns
    -------
    dict or None
        The options with every default filled in; None when absent or invalid.
    """
    if not isinstance(table, dict):  # absent, or of the wrong type (reported by the caller)
        return None
    at = f"{where}.evidence_grid"
    problems = []
    if kind != "btsvc":
        problems.append(f"{at}: only btsvc models take an evidence grid; this model is {kind}")
    elif settings.get("ard"):
        problems.append(f"{at}: the grid runs over one kappa; remove it or set ard = false")
    elif fix_from is not None:
        problems.append(f"{at}: a fix_from model has no evidence optimum to centre the grid "
                        "on; give the grid to the model it fixes from")
    valid = check_table(table, GRID_KEYS, at, lambda msg, key: problems.append(msg))
    for p in problems:
        report(p)
    return None if problems else {**GRID_DEFAULTS, **valid}
