"""The template language (HOT and CFN): pure, no I/O."""
