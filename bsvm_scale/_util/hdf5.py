"""Reading HDF5 attributes written by h5py (text comes back as ``bytes`` or as
a 0-d array depending on how it was stored)."""

from __future__ import annotations

import numpy as np

__all__ = ["decode_text"]


def decode_text(value):
    """``value`` as ``str`` where it holds text (``bytes``, or a 0-d array of
    text); any other value unchanged (a 0-d array becomes its scalar)."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    return value
