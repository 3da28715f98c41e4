//! Policy documents: parsed from JSON once into a compiled [`Policy`] whose statements answer
//! "does this statement apply to this request?" without allocating.

use serde_json::{Map, Value};

use crate::condition::{Condition, Operator};
use crate::context::{PrincipalKind, Request, NO_RESOURCE};
use crate::error::PolicyError;
use crate::pattern::{Pattern, Syntax};

pub use strata_types::limits::{BUCKET_POLICY_SIZE_MAX, IDENTITY_POLICY_SIZE_MAX};

/// What a document is for; it decides the size limit and whether statements name principals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind<'a> {
    /// Attached to a user, group, service account or session: no `Principal`.
    Identity,
    /// The policy of this bucket: every statement names `Principal` or `NotPrincipal`, and every
    /// resource lies in the bucket.
    Bucket(&'a str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Allow,
    Deny,
}

/// The policy language version. `2008-10-17` (also what a document without `Version` gets)
/// has no policy variables: `${aws:username}` there is plain text, as in AWS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V2008_10_17,
    V2012_10_17,
}

/// A compiled policy document.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub id: Option<String>,
    pub version: Version,
    pub(crate) statements: Box<[Statement]>,
}

/// A compiled statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Statement {
    pub sid: Option<String>,
    pub effect: Effect,
    principal: Option<PrincipalMatch>,
    actions: Matcher,
    resources: Matcher,
    conditions: Box<[Condition]>,
}

/// `Action`/`NotAction` or `Resource`/`NotResource`.
#[derive(Debug, Clone, PartialEq)]
struct Matcher {
    negated: bool,
    patterns: Box<[Pattern]>,
}

impl Matcher {
    fn matches(&self, text: &str, request: &Request) -> bool {
        self.patterns.iter().any(|p| p.matches(text, request)) != self.negated
    }
}

/// `Principal`/`NotPrincipal`: `"*"` (everyone, anonymous included) or principal ARNs.
#[derive(Debug, Clone, PartialEq)]
struct PrincipalMatch {
    negated: bool,
    everyone: bool,
    arns: Box<[String]>,
}

impl PrincipalMatch {
    fn matches(&self, request: &Request) -> bool {
        let p = request.principal;
        let named = self.everyone || (p.kind != PrincipalKind::Anonymous && self.arns.contains(&p.arn));
        named != self.negated
    }
}

impl Statement {
    /// Does this statement apply to `request` (principal, action, resource, conditions)?
    pub(crate) fn applies(&self, request: &Request) -> bool {
        self.principal.as_ref().is_none_or(|p| p.matches(request))
            && self.actions.matches(request.action, request)
            && self.resources.matches(request.resource.unwrap_or(NO_RESOURCE), request)
            && self.conditions.iter().all(|c| c.holds(request))
    }
}

impl Policy {
    /// Parses and compiles a policy document; the error says where it is wrong.
    pub fn parse(document: &[u8], kind: PolicyKind) -> Result<Policy, PolicyError> {
        check_size(document, kind)?;
        let value: Value = crate::json::parse(document).map_err(|e| {
            PolicyError::new(
                "",
                format!("JSON syntax error at line {}, column {}: {}", e.line(), e.column(), json_reason(&e)),
            )
        })?;
        let Value::Object(top) = value else {
            return Err(PolicyError::new("", "a policy is a JSON object"));
        };
        for key in top.keys() {
            if !["Version", "Id", "Statement"].contains(&key.as_str()) {
                return Err(PolicyError::new(key.as_str(), "unknown element"));
            }
        }
        let version = match top.get("Version") {
            None => Version::V2008_10_17,
            Some(Value::String(v)) if v == "2012-10-17" => Version::V2012_10_17,
            Some(Value::String(v)) if v == "2008-10-17" => Version::V2008_10_17,
            Some(_) => return Err(PolicyError::new("Version", "must be \"2012-10-17\" or \"2008-10-17\"")),
        };
        let id = match top.get("Id") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(PolicyError::new("Id", "must be a string")),
        };
        let variables = version == Version::V2012_10_17;
        let statements: Vec<Statement> = match top.get("Statement") {
            None => return Err(PolicyError::new("Statement", "required")),
            Some(Value::Object(s)) => vec![statement(s, "Statement", kind, variables)?],
            Some(Value::Array(list)) if list.is_empty() => {
                return Err(PolicyError::new("Statement", "must hold at least one statement"))
            }
            Some(Value::Array(list)) => list
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let at = format!("Statement[{i}]");
                    match s {
                        Value::Object(s) => statement(s, &at, kind, variables),
                        _ => Err(PolicyError::new(at, "a statement is a JSON object")),
                    }
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(PolicyError::new("Statement", "must be a statement or a list of them")),
        };
        Ok(Policy { id, version, statements: statements.into() })
    }

    /// Does a statement condition on a key starting with `prefix` (compared as condition keys
    /// are: the part before a `/` in any case)? Lets a caller read what such keys need (an
    /// object's tags, say) only when a policy asks for it.
    pub fn conditions_on(&self, prefix: &str) -> bool {
        let prefix = crate::context::normalize_key(prefix);
        self.statements.iter().flat_map(|s| s.conditions.iter()).any(|c| c.key().starts_with(&prefix))
    }

    /// The statements' ids, in order (`None` where a statement has no `Sid`).
    pub fn sids(&self) -> impl Iterator<Item = Option<&str>> {
        self.statements.iter().map(|s| s.sid.as_deref())
    }

    /// Is the policy public, as S3's `GetBucketPolicyStatus` and `BlockPublicPolicy` mean it?
    /// Public when some `Allow` statement names everyone (`"*"`) and none of its conditions
    /// limits it to fixed values (`aws:SourceIp` CIDR blocks, or exact `aws:SourceArn`,
    /// `aws:SourceVpc(e)`, `aws:SourceOwner`, `aws:SourceAccount`, KMS key id or `aws:userid`).
    pub fn is_public(&self) -> bool {
        self.statements.iter().any(|s| {
            s.effect == Effect::Allow
                && s.principal.as_ref().is_some_and(|p| p.everyone && !p.negated)
                && !s.conditions.iter().any(Condition::limits_to_fixed_values)
        })
    }
}

fn check_size(document: &[u8], kind: PolicyKind) -> Result<(), PolicyError> {
    let (size, max, counted) = match kind {
        PolicyKind::Bucket(_) => (document.len(), BUCKET_POLICY_SIZE_MAX, "bytes"),
        PolicyKind::Identity => (
            document.iter().filter(|b| !b.is_ascii_whitespace()).count(),
            IDENTITY_POLICY_SIZE_MAX,
            "bytes without white space",
        ),
    };
    if size > max {
        return Err(PolicyError::new("", format!("the policy is {size} {counted}; the limit is {max}")));
    }
    Ok(())
}

/// serde_json's message without its own " at line L column C" tail (we say it first).
fn json_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

const STATEMENT_ELEMENTS: &[&str] = &[
    "Sid",
    "Effect",
    "Principal",
    "NotPrincipal",
    "Action",
    "NotAction",
    "Resource",
    "NotResource",
    "Condition",
];

fn statement(
    s: &Map<String, Value>,
    at: &str,
    kind: PolicyKind,
    variables: bool,
) -> Result<Statement, PolicyError> {
    if let Some(key) = s.keys().find(|k| !STATEMENT_ELEMENTS.contains(&k.as_str())) {
        return Err(PolicyError::new(format!("{at}.{key}"), "unknown element"));
    }
    let sid = match s.get("Sid") {
        None => None,
        Some(Value::String(sid)) => Some(sid.clone()),
        Some(_) => return Err(PolicyError::new(format!("{at}.Sid"), "must be a string")),
    };
    let effect = match s.get("Effect") {
        Some(Value::String(e)) if e == "Allow" => Effect::Allow,
        Some(Value::String(e)) if e == "Deny" => Effect::Deny,
        None => return Err(PolicyError::new(format!("{at}.Effect"), "required")),
        Some(_) => return Err(PolicyError::new(format!("{at}.Effect"), "must be \"Allow\" or \"Deny\"")),
    };
    let principal = principal(s, at, kind, effect)?;
    let (actions, action_at) = one_of(s, at, "Action", "NotAction")?;
    let action_syntax = Syntax { wildcards: true, variables: false, ignore_case: true };
    let actions = matcher(actions, &action_at, |a| {
        crate::action::check(a).and_then(|()| Pattern::compile(a, action_syntax))
    })?;
    let (resources, resource_at) = one_of(s, at, "Resource", "NotResource")?;
    let resource_syntax = Syntax { wildcards: true, variables, ignore_case: false };
    let resources = matcher(resources, &resource_at, |r| {
        check_resource(r, kind)?;
        Pattern::compile(r, resource_syntax)
    })?;
    let conditions = match s.get("Condition") {
        None => Box::default(),
        Some(Value::Object(c)) => conditions(c, &format!("{at}.Condition"), variables)?,
        Some(_) => return Err(PolicyError::new(format!("{at}.Condition"), "must be an object of operators")),
    };
    Ok(Statement { sid, effect, principal, actions, resources, conditions })
}

/// The one element of a pair present (`Action` or `NotAction`), with its location.
fn one_of<'v>(
    s: &'v Map<String, Value>,
    at: &str,
    positive: &str,
    negative: &str,
) -> Result<((bool, &'v Value), String), PolicyError> {
    match (s.get(positive), s.get(negative)) {
        (Some(v), None) => Ok(((false, v), format!("{at}.{positive}"))),
        (None, Some(v)) => Ok(((true, v), format!("{at}.{negative}"))),
        (Some(_), Some(_)) => Err(PolicyError::new(at, format!("has both {positive} and {negative}"))),
        (None, None) => Err(PolicyError::new(at, format!("needs {positive} or {negative}"))),
    }
}

/// Compiles each string of a string-or-list element with `compile`.
fn matcher(
    (negated, value): (bool, &Value),
    at: &str,
    compile: impl Fn(&str) -> Result<Pattern, String>,
) -> Result<Matcher, PolicyError> {
    let strings = string_list(value, at)?;
    let patterns = strings
        .iter()
        .enumerate()
        .map(|(i, (s, loc))| compile(s).map_err(|e| PolicyError::new(loc_of(at, *loc, i), e)))
        .collect::<Result<_, _>>()?;
    Ok(Matcher { negated, patterns })
}

fn loc_of(at: &str, listed: bool, i: usize) -> String {
    if listed {
        format!("{at}[{i}]")
    } else {
        at.to_owned()
    }
}

/// A string or a non-empty list of strings; each with whether it came from a list.
fn string_list<'v>(value: &'v Value, at: &str) -> Result<Vec<(&'v str, bool)>, PolicyError> {
    match value {
        Value::String(s) => Ok(vec![(s.as_str(), false)]),
        Value::Array(list) if list.is_empty() => Err(PolicyError::new(at, "must not be empty")),
        Value::Array(list) => list
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok((s.as_str(), true)),
                _ => Err(PolicyError::new(format!("{at}[{i}]"), "must be a string")),
            })
            .collect(),
        _ => Err(PolicyError::new(at, "must be a string or a list of strings")),
    }
}

const S3_ARN_PREFIX: &str = "arn:aws:s3:::";

/// Resources are `*` or S3 ARNs; in a bucket policy, ARNs of that bucket (or its objects).
fn check_resource(resource: &str, kind: PolicyKind) -> Result<(), String> {
    if resource == "*" {
        return Ok(());
    }
    let Some(path) = resource.strip_prefix(S3_ARN_PREFIX) else {
        return Err(format!(
            "{resource:?} is not an S3 ARN (arn:aws:s3:::bucket or arn:aws:s3:::bucket/key)"
        ));
    };
    if let PolicyKind::Bucket(bucket) = kind {
        let bucket_part = path.split('/').next().unwrap_or(path);
        let in_bucket = bucket_part.contains("${")
            || Pattern::compile(
                bucket_part,
                Syntax { wildcards: true, variables: false, ignore_case: false },
            )
            .is_ok_and(|p| p.matches(bucket, &crate::pattern::NoVariables));
        if !in_bucket {
            return Err(format!("{resource:?} is not in bucket {bucket:?}"));
        }
    }
    Ok(())
}

fn principal(
    s: &Map<String, Value>,
    at: &str,
    kind: PolicyKind,
    effect: Effect,
) -> Result<Option<PrincipalMatch>, PolicyError> {
    let (negated, value, p_at) = match (s.get("Principal"), s.get("NotPrincipal")) {
        (None, None) if kind == PolicyKind::Identity => return Ok(None),
        (None, None) => {
            return Err(PolicyError::new(at, "a bucket policy statement needs Principal or NotPrincipal"))
        }
        (Some(_), Some(_)) => return Err(PolicyError::new(at, "has both Principal and NotPrincipal")),
        (Some(v), None) => (false, v, format!("{at}.Principal")),
        (None, Some(v)) => (true, v, format!("{at}.NotPrincipal")),
    };
    if kind == PolicyKind::Identity {
        return Err(PolicyError::new(p_at, "identity policies name no principal"));
    }
    if negated && effect == Effect::Allow {
        return Err(PolicyError::new(p_at, "NotPrincipal is only allowed with \"Effect\": \"Deny\""));
    }
    let aws = match value {
        Value::String(s) if s == "*" => {
            return Ok(Some(PrincipalMatch { negated, everyone: true, arns: Box::default() }))
        }
        Value::Object(map) => {
            if let Some(other) = map.keys().find(|k| *k != "AWS") {
                return Err(PolicyError::new(
                    format!("{p_at}.{other}"),
                    "only \"AWS\" principals are supported",
                ));
            }
            map.get("AWS").ok_or_else(|| PolicyError::new(&p_at, "names no principal"))?
        }
        _ => return Err(PolicyError::new(p_at, "must be \"*\" or {\"AWS\": ...}")),
    };
    let aws_at = format!("{p_at}.AWS");
    let mut everyone = false;
    let mut arns = Vec::new();
    for (i, (name, listed)) in string_list(aws, &aws_at)?.into_iter().enumerate() {
        if name == "*" {
            everyone = true;
        } else if let Some(arn) = principal_arn(name) {
            arns.push(arn);
        } else {
            return Err(PolicyError::new(
                loc_of(&aws_at, listed, i),
                format!("{name:?} is not \"*\", an account id or a user, role or root ARN"),
            ));
        }
    }
    Ok(Some(PrincipalMatch { negated, everyone, arns: arns.into() }))
}

/// A principal as the evaluator compares it. A deployment is one account, so the account field
/// of an ARN written for AWS (`arn:aws:iam::111122223333:user/alice`) is dropped, and an account
/// id alone means that account's root (`arn:aws:iam:::root`): as in AWS, naming the account in a
/// bucket policy grants its users nothing their own policies do not.
fn principal_arn(name: &str) -> Option<String> {
    if name.len() == 12 && name.bytes().all(|b| b.is_ascii_digit()) {
        return Some("arn:aws:iam:::root".to_owned());
    }
    let mut parts = name.splitn(6, ':');
    let [arn, partition, service, region, _account, resource] =
        [parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?];
    let named = arn == "arn" && ["iam", "sts"].contains(&service) && !resource.is_empty();
    (named && !name.contains(['*', '?'])).then(|| format!("arn:{partition}:{service}:{region}::{resource}"))
}

fn conditions(c: &Map<String, Value>, at: &str, variables: bool) -> Result<Box<[Condition]>, PolicyError> {
    let mut out = Vec::new();
    for (op_name, block) in c {
        let op_at = format!("{at}.{op_name}");
        let operator = Operator::parse(op_name).map_err(|e| PolicyError::new(&op_at, e))?;
        let Value::Object(block) = block else {
            return Err(PolicyError::new(op_at, "must be an object of condition keys"));
        };
        if block.is_empty() {
            return Err(PolicyError::new(op_at, "names no condition key"));
        }
        for (key, values) in block {
            let key_at = format!("{op_at}.{key}");
            let values = scalar_list(values, &key_at)?;
            out.push(
                Condition::compile(operator, key, &values, variables)
                    .map_err(|e| PolicyError::new(key_at, e))?,
            );
        }
    }
    Ok(out.into())
}

/// Condition values: a string, number or boolean, or a list of them, as text.
fn scalar_list(value: &Value, at: &str) -> Result<Vec<String>, PolicyError> {
    let one = |v: &Value, at: &dyn Fn() -> String| match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(PolicyError::new(at(), "must be a string, number or boolean")),
    };
    match value {
        Value::Array(list) => {
            list.iter().enumerate().map(|(i, v)| one(v, &|| format!("{at}[{i}]"))).collect()
        }
        v => Ok(vec![one(v, &|| at.to_owned())?]),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
