"""Undo a cell's effect on the kernel: fingerprints of the user's names (undo_print.py), the copy of the
state before a cell held while it runs (undo_hold.py), arrays written back from the copy's memory
(undo_direct.py), and the undo itself (undo.py)."""
