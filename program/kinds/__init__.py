"""Target kinds: one folder per kind (its config model, component factory, verify checks, mock answers),
its entry in the folder's __init__.py, and the table of all of them in `program.kinds.table`."""
