//! strata-s3
