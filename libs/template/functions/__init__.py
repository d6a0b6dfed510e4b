"""Intrinsic functions: the framework (:mod:`base`), HOT's (:mod:`hot`) and CFN's (:mod:`cfn`)."""
