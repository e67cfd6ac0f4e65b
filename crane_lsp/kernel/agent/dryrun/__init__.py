"""The dry run in the kernel: fork, confine (``jail/``), run the cell, answer; the prepared child,
shape-level stand-ins, the facts at a failing line, and why a fork cannot run a cell."""
