"""The analysis of one cell: positions, effects of calls, and what certainly runs before a line."""
