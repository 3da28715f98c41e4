//! The `Condition` element: operators, their compiled operands, and AWS's rules for missing
//! keys, multi-valued keys and negated operators.
//!
//! One condition is `operator: { key: value | [values] }`. Within a statement every operator
//! and every key must hold (AND); the values listed for one key are alternatives (OR). For a key
//! the request lacks, a positive operator is false, a negated one (`StringNotEquals`,
//! `NotIpAddress`, ...) true, and any `...IfExists` form true. With a set qualifier the request's
//! values are judged one by one: `ForAnyValue:` holds when at least one value passes (false for
//! no values), `ForAllValues:` when every value passes (true for no values). A value "passes" a
//! negated operator when it matches none of the policy's values. `Null: true` holds when the key
//! is absent, `Null: false` when it is present.

use std::net::IpAddr;

use crate::context::{normalize_key, Request};
use crate::pattern::{Pattern, Syntax};
use crate::scalar::{self, Cidr};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Qualifier {
    Single,
    ForAnyValue,
    ForAllValues,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ordering {
    Equals,
    LessThan,
    LessThanEquals,
    GreaterThan,
    GreaterThanEquals,
}

impl Ordering {
    fn holds<T: PartialOrd>(self, request: T, policy: T) -> bool {
        match self {
            Ordering::Equals => request == policy,
            Ordering::LessThan => request < policy,
            Ordering::LessThanEquals => request <= policy,
            Ordering::GreaterThan => request > policy,
            Ordering::GreaterThanEquals => request >= policy,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    StringEquals,
    StringEqualsIgnoreCase,
    StringLike,
    Numeric(Ordering),
    Date(Ordering),
    Bool,
    IpAddress,
    Arn,
    Null,
}

/// Operator names → (kind, negated).
const OPERATORS: &[(&str, Kind, bool)] = &[
    ("StringEquals", Kind::StringEquals, false),
    ("StringNotEquals", Kind::StringEquals, true),
    ("StringEqualsIgnoreCase", Kind::StringEqualsIgnoreCase, false),
    ("StringNotEqualsIgnoreCase", Kind::StringEqualsIgnoreCase, true),
    ("StringLike", Kind::StringLike, false),
    ("StringNotLike", Kind::StringLike, true),
    ("NumericEquals", Kind::Numeric(Ordering::Equals), false),
    ("NumericNotEquals", Kind::Numeric(Ordering::Equals), true),
    ("NumericLessThan", Kind::Numeric(Ordering::LessThan), false),
    ("NumericLessThanEquals", Kind::Numeric(Ordering::LessThanEquals), false),
    ("NumericGreaterThan", Kind::Numeric(Ordering::GreaterThan), false),
    ("NumericGreaterThanEquals", Kind::Numeric(Ordering::GreaterThanEquals), false),
    ("DateEquals", Kind::Date(Ordering::Equals), false),
    ("DateNotEquals", Kind::Date(Ordering::Equals), true),
    ("DateLessThan", Kind::Date(Ordering::LessThan), false),
    ("DateLessThanEquals", Kind::Date(Ordering::LessThanEquals), false),
    ("DateGreaterThan", Kind::Date(Ordering::GreaterThan), false),
    ("DateGreaterThanEquals", Kind::Date(Ordering::GreaterThanEquals), false),
    ("Bool", Kind::Bool, false),
    ("IpAddress", Kind::IpAddress, false),
    ("NotIpAddress", Kind::IpAddress, true),
    // AWS documents ArnEquals and ArnLike as the same test (wildcards allowed in both).
    ("ArnEquals", Kind::Arn, false),
    ("ArnLike", Kind::Arn, false),
    ("ArnNotEquals", Kind::Arn, true),
    ("ArnNotLike", Kind::Arn, true),
    ("Null", Kind::Null, false),
];

/// A parsed operator name such as `ForAllValues:StringLikeIfExists`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Operator {
    kind: Kind,
    negated: bool,
    qualifier: Qualifier,
    if_exists: bool,
}

impl Operator {
    pub(crate) fn parse(name: &str) -> Result<Operator, String> {
        let (qualifier, rest) = if let Some(rest) = name.strip_prefix("ForAnyValue:") {
            (Qualifier::ForAnyValue, rest)
        } else if let Some(rest) = name.strip_prefix("ForAllValues:") {
            (Qualifier::ForAllValues, rest)
        } else {
            (Qualifier::Single, name)
        };
        let (base, if_exists) = match rest.strip_suffix("IfExists") {
            Some(base) => (base, true),
            None => (rest, false),
        };
        let Some(&(_, kind, negated)) = OPERATORS.iter().find(|(n, _, _)| *n == base) else {
            return Err("unknown condition operator".to_owned());
        };
        if kind == Kind::Null && (if_exists || qualifier != Qualifier::Single) {
            return Err("Null takes neither IfExists nor a set qualifier".to_owned());
        }
        Ok(Operator { kind, negated, qualifier, if_exists })
    }
}

/// The policy's values for one key, compiled for the operator.
#[derive(Debug, Clone, PartialEq)]
enum Operands {
    Text(Box<[Pattern]>),
    Number(Box<[f64]>),
    Date(Box<[i64]>),
    Bool(Box<[bool]>),
    Ip(Box<[Cidr]>),
    /// The six colon-separated parts of each ARN, each a pattern.
    Arn(Box<[[Pattern; 6]]>),
    /// `true`: the key must be absent.
    Null(bool),
}

/// One compiled `operator: { key: values }` pair.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    operator: Operator,
    /// Normalized (see [`normalize_key`]).
    key: Box<str>,
    operands: Operands,
}

impl Condition {
    /// The key, normalized.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Compiles the values for `key` under `operator`. `variables`: the policy's version lets
    /// `${...}` stand for request values. Errors say what is wrong, without the location.
    pub(crate) fn compile(
        operator: Operator,
        key: &str,
        values: &[String],
        variables: bool,
    ) -> Result<Condition, String> {
        check_key(key)?;
        if values.is_empty() {
            return Err("needs at least one value".to_owned());
        }
        let each = |what: &str, v: &String| format!("{v:?} is not {what}");
        let text = |syntax: Syntax| -> Result<Box<[Pattern]>, String> {
            values.iter().map(|v| Pattern::compile(v, syntax)).collect()
        };
        let operands = match operator.kind {
            Kind::StringEquals => {
                Operands::Text(text(Syntax { wildcards: false, variables, ignore_case: false })?)
            }
            Kind::StringEqualsIgnoreCase => {
                Operands::Text(text(Syntax { wildcards: false, variables, ignore_case: true })?)
            }
            Kind::StringLike => {
                Operands::Text(text(Syntax { wildcards: true, variables, ignore_case: false })?)
            }
            Kind::Numeric(_) => Operands::Number(
                values
                    .iter()
                    .map(|v| scalar::number(v).ok_or_else(|| each("a number", v)))
                    .collect::<Result<_, _>>()?,
            ),
            Kind::Date(_) => Operands::Date(
                values
                    .iter()
                    .map(|v| scalar::date(v).ok_or_else(|| each("an ISO 8601 date or epoch seconds", v)))
                    .collect::<Result<_, _>>()?,
            ),
            Kind::Bool => Operands::Bool(
                values
                    .iter()
                    .map(|v| scalar::boolean(v).ok_or_else(|| each("true or false", v)))
                    .collect::<Result<_, _>>()?,
            ),
            Kind::IpAddress => Operands::Ip(
                values
                    .iter()
                    .map(|v| Cidr::parse(v).ok_or_else(|| each("an IP address or CIDR block", v)))
                    .collect::<Result<_, _>>()?,
            ),
            Kind::Arn => {
                Operands::Arn(values.iter().map(|v| arn_pattern(v, variables)).collect::<Result<_, _>>()?)
            }
            Kind::Null => match values {
                [v] => Operands::Null(scalar::boolean(v).ok_or_else(|| each("true or false", v))?),
                _ => return Err("Null takes one value, true or false".to_owned()),
            },
        };
        Ok(Condition { operator, key: normalize_key(key).into(), operands })
    }

    /// Does the condition hold for `request`?
    pub(crate) fn holds(&self, request: &Request) -> bool {
        let values = request.values_of(&self.key);
        if let Operands::Null(absent) = self.operands {
            return values.is_empty() == absent;
        }
        let op = self.operator;
        if values.is_empty() {
            return op.if_exists
                || match op.qualifier {
                    Qualifier::Single => op.negated,
                    Qualifier::ForAnyValue => false,
                    Qualifier::ForAllValues => true,
                };
        }
        match op.qualifier {
            Qualifier::Single => values.iter().any(|v| self.matches(v, request)) != op.negated,
            Qualifier::ForAnyValue => values.iter().any(|v| self.matches(v, request) != op.negated),
            Qualifier::ForAllValues => values.iter().all(|v| self.matches(v, request) != op.negated),
        }
    }

    /// Does this condition limit a statement to fixed values of a key that S3 counts as
    /// making a policy non-public ("The meaning of public"): `aws:SourceIp` to CIDR blocks, or a
    /// source, VPC, account, KMS key or user id to exact values? Negated, `IfExists` and
    /// `ForAllValues:` forms do not limit (each can hold for a request without the value).
    pub(crate) fn limits_to_fixed_values(&self) -> bool {
        let op = self.operator;
        if op.negated || op.if_exists || op.qualifier == Qualifier::ForAllValues {
            return false;
        }
        match &self.operands {
            Operands::Ip(cidrs) => &*self.key == "aws:sourceip" && cidrs.iter().all(Cidr::is_restricting),
            Operands::Text(patterns) => {
                FIXED_VALUE_KEYS.contains(&&*self.key) && patterns.iter().all(Pattern::is_literal)
            }
            Operands::Arn(arns) => {
                FIXED_VALUE_KEYS.contains(&&*self.key)
                    && arns.iter().all(|parts| parts.iter().all(Pattern::is_literal))
            }
            _ => false,
        }
    }

    /// Does one request value match any of the policy's values (the positive test)?
    fn matches(&self, value: &str, request: &Request) -> bool {
        match (&self.operands, self.operator.kind) {
            (Operands::Text(patterns), _) => patterns.iter().any(|p| p.matches(value, request)),
            (Operands::Number(ns), Kind::Numeric(ord)) => {
                scalar::number(value).is_some_and(|v| ns.iter().any(|n| ord.holds(v, *n)))
            }
            (Operands::Date(ds), Kind::Date(ord)) => {
                scalar::date(value).is_some_and(|v| ds.iter().any(|d| ord.holds(v, *d)))
            }
            (Operands::Bool(bs), _) => scalar::boolean(value).is_some_and(|v| bs.contains(&v)),
            (Operands::Ip(cidrs), _) => {
                value.trim().parse::<IpAddr>().is_ok_and(|ip| cidrs.iter().any(|c| c.contains(ip)))
            }
            (Operands::Arn(arns), _) => {
                let parts = split_arn(value);
                arns.iter().any(|arn| {
                    parts.is_some_and(|parts| arn.iter().zip(parts).all(|(p, part)| p.matches(part, request)))
                })
            }
            // Null is answered in `holds`; the other pairs cannot be built.
            _ => false,
        }
    }
}

/// `arn:partition:service:region:account:resource` (the resource may hold more colons).
fn split_arn(arn: &str) -> Option<[&str; 6]> {
    let mut it = arn.splitn(6, ':');
    let parts = [it.next()?, it.next()?, it.next()?, it.next()?, it.next()?, it.next()?];
    (parts[0] == "arn").then_some(parts)
}

fn arn_pattern(value: &str, variables: bool) -> Result<[Pattern; 6], String> {
    let syntax = Syntax { wildcards: true, variables, ignore_case: false };
    let parts = split_arn(value)
        .ok_or_else(|| format!("{value:?} is not an ARN (arn:partition:service:region:account:resource)"))?;
    let compiled: Vec<Pattern> =
        parts.iter().map(|p| Pattern::compile(p, syntax)).collect::<Result<_, _>>()?;
    compiled.try_into().map_err(|_| "an ARN has six parts".to_owned())
}

/// Keys whose fixed values make a bucket policy non-public (lowercase), after S3's
/// PublicAccessBlock documentation.
const FIXED_VALUE_KEYS: &[&str] = &[
    "aws:sourcearn",
    "aws:sourcevpc",
    "aws:sourcevpce",
    "aws:sourceowner",
    "aws:sourceaccount",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "aws:userid",
];

/// Global condition keys Strata knows (lowercase).
/// Keys AWS defines that Strata never sets (VPCs, organizations, AWS services) are known too, so
/// policies written for AWS load; in a request they are always missing.
const AWS_KEYS: &[&str] = &[
    "aws:calledvia",
    "aws:calledviafirst",
    "aws:calledvialast",
    "aws:currenttime",
    "aws:epochtime",
    "aws:multifactorauthage",
    "aws:multifactorauthpresent",
    "aws:federatedprovider",
    "aws:principalaccount",
    "aws:principalarn",
    "aws:principalisawsservice",
    "aws:principalorgid",
    "aws:principalorgpaths",
    "aws:principalservicename",
    "aws:principaltype",
    "aws:referer",
    "aws:requestedregion",
    "aws:resourceaccount",
    "aws:resourceorgid",
    "aws:resourceorgpaths",
    "aws:securetransport",
    "aws:sourceaccount",
    "aws:sourcearn",
    "aws:sourceidentity",
    "aws:sourceip",
    "aws:sourceorgid",
    "aws:sourceorgpaths",
    "aws:sourceowner",
    "aws:sourcevpc",
    "aws:sourcevpce",
    "aws:tagkeys",
    "aws:tokenissuetime",
    "aws:useragent",
    "aws:userid",
    "aws:username",
    "aws:viaawsservice",
    "aws:vpcsourceip",
];

/// S3 condition keys (lowercase), from the S3 service authorization reference.
const S3_KEYS: &[&str] = &[
    "s3:accesspointnetworkorigin",
    "s3:authtype",
    "s3:dataaccesspointaccount",
    "s3:dataaccesspointarn",
    "s3:delimiter",
    "s3:if-match",
    "s3:if-none-match",
    "s3:locationconstraint",
    "s3:max-keys",
    "s3:object-lock-legal-hold",
    "s3:object-lock-mode",
    "s3:object-lock-remaining-retention-days",
    "s3:object-lock-retain-until-date",
    "s3:prefix",
    "s3:requestobjecttagkeys",
    "s3:resourceaccount",
    "s3:signatureage",
    "s3:signatureversion",
    "s3:tlsversion",
    "s3:versionid",
    "s3:x-amz-acl",
    "s3:x-amz-content-sha256",
    "s3:x-amz-copy-source",
    "s3:x-amz-grant-full-control",
    "s3:x-amz-grant-read",
    "s3:x-amz-grant-read-acp",
    "s3:x-amz-grant-write",
    "s3:x-amz-grant-write-acp",
    "s3:x-amz-metadata-directive",
    "s3:x-amz-object-ownership",
    "s3:x-amz-server-side-encryption",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "s3:x-amz-server-side-encryption-customer-algorithm",
    "s3:x-amz-storage-class",
];

/// Keys whose name ends in a tag key: `s3:ExistingObjectTag/<key>` and the like.
const TAG_KEYS: &[&str] = &[
    "aws:principaltag/",
    "aws:requesttag/",
    "aws:resourcetag/",
    "s3:existingobjecttag/",
    "s3:requestobjecttag/",
];

/// Known condition keys are refused no more than unknown ones are accepted: an unknown key would
/// make its condition silently false (or, negated, silently true). `jwt:` keys name the claims
/// of an OpenID Connect token and may be anything.
fn check_key(key: &str) -> Result<(), String> {
    let k = normalize_key(key);
    let known = AWS_KEYS.contains(&k.as_str())
        || S3_KEYS.contains(&k.as_str())
        || TAG_KEYS.iter().any(|t| k.len() > t.len() && k.starts_with(t))
        || k.strip_prefix("jwt:").is_some_and(|claim| !claim.is_empty());
    if known {
        Ok(())
    } else {
        Err("unknown condition key".to_owned())
    }
}

#[cfg(test)]
#[path = "condition_tests.rs"]
mod tests;
