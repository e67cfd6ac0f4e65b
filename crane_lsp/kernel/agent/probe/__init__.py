"""The probe: what the kernel's objects are, read without running them (summaries, facts, stats)."""
