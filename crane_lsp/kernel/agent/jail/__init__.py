"""The jail: the security boundary a dry run's fork is confined by (seccomp, Landlock, descriptors,
mappings, thread pools, workers). Review it as one unit."""
