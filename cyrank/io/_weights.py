"""Weight files: one weight per line, line k for row k of the data file it goes with (LightGBM's ``.weight``
file format). Blank lines and ``#`` comments are not allowed, so that line k is always row k."""
import os

import numpy as np


def load_weights(path, n_rows=None, *, data=None):
    """Read a weight file into a float64 vector; ``n_rows`` (the rows of ``data``, a name for messages) checks
    its length. Values are checked as every ``sample_weight`` is (cyrank._validation.check_sample_weight).

    Errors name the file and the line: a value that is not a number, a blank line, or a count that differs from
    the data's rows.
    """
    from .._validation import check_sample_weight

    name = os.fspath(path)
    values = []
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            text = line.strip()
            try:
                values.append(float(text))
            except ValueError:
                shown = text.decode("utf-8", "replace")[:40]
                what = "a blank line" if not text else f"{shown!r} is not a number"
                raise ValueError(f"{name}, line {number}: {what}; a weight file holds one weight per line, line k "
                                 "for row k of the data file") from None
    if not values:
        raise ValueError(f"{name} holds no weight; a weight file holds one weight per line, one line per row")
    w = np.asarray(values, dtype=np.float64)
    if n_rows is not None and w.shape[0] != n_rows:
        raise ValueError(f"{name} has {w.shape[0]} weights but {data or 'the data'} has {n_rows} rows; a weight file "
                         "holds one weight per line, line k for row k")
    try:
        return check_sample_weight(w, w.shape[0])
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
