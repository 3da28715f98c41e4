//! strata-cluster
