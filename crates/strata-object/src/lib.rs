//! strata-object
