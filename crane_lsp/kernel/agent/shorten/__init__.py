"""The shortened run: a slow cell run again on samples, where its time goes, and the verdict by
what the shortening changed."""
