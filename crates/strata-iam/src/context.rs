//! The inputs of one authorization decision: who asks ([`Principal`]), for what (action and
//! resource ARN) and the request's condition keys ([`ConditionValues`]), bundled as a
//! [`Request`].

use std::collections::BTreeMap;

use crate::pattern::Variables;

/// Who a request acts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PrincipalKind {
    /// The deployment's root user (from the environment).
    Root,
    /// An IAM user with long-term keys.
    User,
    /// An access key that belongs to a user ([`Principal::name`] is that user).
    ServiceAccount,
    /// Temporary credentials from STS.
    AssumedRole,
    /// No signature at all.
    Anonymous,
}

impl PrincipalKind {
    /// The value of `aws:PrincipalType`, as AWS names it.
    pub fn aws_type(self) -> &'static str {
        match self {
            PrincipalKind::Root => "Account",
            PrincipalKind::User | PrincipalKind::ServiceAccount => "User",
            PrincipalKind::AssumedRole => "AssumedRole",
            PrincipalKind::Anonymous => "Anonymous",
        }
    }
}

/// The identity a request is evaluated for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub kind: PrincipalKind,
    /// The user the request acts for (`aws:username`): a service account's or session's parent
    /// user; empty for root and anonymous.
    pub name: String,
    /// `aws:userid`: the access key for users and service accounts, `anonymous` for anonymous.
    pub user_id: String,
    /// Matched against bucket policies' `Principal` (`aws:PrincipalArn`).
    pub arn: String,
}

impl Principal {
    pub fn root(access_key: &str) -> Principal {
        Principal {
            kind: PrincipalKind::Root,
            name: String::new(),
            user_id: access_key.to_owned(),
            arn: "arn:aws:iam:::root".to_owned(),
        }
    }

    pub fn user(name: &str, access_key: &str) -> Principal {
        Principal {
            kind: PrincipalKind::User,
            name: name.to_owned(),
            user_id: access_key.to_owned(),
            arn: format!("arn:aws:iam:::user/{name}"),
        }
    }

    /// A service account of user `parent`: it is that user in policies (name and ARN).
    pub fn service_account(parent: &str, access_key: &str) -> Principal {
        Principal { kind: PrincipalKind::ServiceAccount, ..Principal::user(parent, access_key) }
    }

    /// Temporary credentials of user `parent`, session named `session`.
    pub fn assumed_role(parent: &str, access_key: &str, session: &str) -> Principal {
        Principal {
            kind: PrincipalKind::AssumedRole,
            name: parent.to_owned(),
            user_id: access_key.to_owned(),
            arn: format!("arn:aws:sts:::assumed-role/{parent}/{session}"),
        }
    }

    pub fn anonymous() -> Principal {
        Principal {
            kind: PrincipalKind::Anonymous,
            name: String::new(),
            user_id: "anonymous".to_owned(),
            arn: String::new(),
        }
    }
}

/// A condition key as stored and looked up: AWS key names are case-insensitive, so the name is
/// lowercased; a tag key after the first `/` (`s3:ExistingObjectTag/Project`) keeps its case,
/// because tag keys are case-sensitive.
pub fn normalize_key(key: &str) -> String {
    match key.split_once('/') {
        Some((name, tag)) => format!("{}/{tag}", name.to_ascii_lowercase()),
        None => key.to_ascii_lowercase(),
    }
}

/// The request's condition keys, each with one or more values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConditionValues {
    map: BTreeMap<String, Vec<String>>,
}

impl ConditionValues {
    pub fn new() -> ConditionValues {
        ConditionValues::default()
    }

    /// Adds one value to `key` (a key given twice is multi-valued).
    pub fn insert(&mut self, key: &str, value: impl Into<String>) {
        self.map.entry(normalize_key(key)).or_default().push(value.into());
    }

    /// Builder form of [`insert`](Self::insert).
    pub fn with(mut self, key: &str, value: impl Into<String>) -> ConditionValues {
        self.insert(key, value);
        self
    }

    /// The values of a normalized key.
    pub fn get(&self, key: &str) -> &[String] {
        self.map.get(key).map_or(&[], Vec::as_slice)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }
}

/// The values one condition key has in a request.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    One(&'a str),
    Many(&'a [String]),
}

impl<'a> Values<'a> {
    pub fn is_empty(&self) -> bool {
        matches!(self, Values::Many([]))
    }

    pub fn iter(self) -> impl Iterator<Item = &'a str> {
        let (one, many) = match self {
            Values::One(v) => (Some(v), &[][..]),
            Values::Many(vs) => (None, vs),
        };
        one.into_iter().chain(many.iter().map(String::as_str))
    }
}

/// One authorization question.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `s3:GetObject`, `admin:CreateUser`, ...
    pub action: &'a str,
    /// `arn:aws:s3:::bucket/key`; `None` for actions on no resource (ListAllMyBuckets, admin
    /// and STS actions), which policies see as [`NO_RESOURCE`].
    pub resource: Option<&'a str>,
    pub principal: &'a Principal,
    pub values: &'a ConditionValues,
}

/// What the `Resource` element is matched against when an action has no resource: the root of
/// the S3 namespace, so `"*"` and `"arn:aws:s3:::*"` match it and no bucket or object ARN does.
pub const NO_RESOURCE: &str = "arn:aws:s3:::";

impl<'a> Request<'a> {
    /// The values of a normalized condition key. Keys that describe the principal
    /// (`aws:username`, `aws:userid`, `aws:PrincipalType`, `aws:PrincipalArn`) come from
    /// [`Request::principal`], whatever the map says.
    pub fn values_of(&self, key: &str) -> Values<'a> {
        let p = self.principal;
        let from_principal = match key {
            "aws:username" => Some((!p.name.is_empty()).then_some(p.name.as_str())),
            "aws:userid" => Some(Some(p.user_id.as_str())),
            "aws:principaltype" => Some(Some(p.kind.aws_type())),
            "aws:principalarn" => Some((!p.arn.is_empty()).then_some(p.arn.as_str())),
            _ => None,
        };
        match from_principal {
            Some(Some(v)) => Values::One(v),
            Some(None) => Values::Many(&[]),
            None => Values::Many(self.values.get(key)),
        }
    }
}

impl Variables for Request<'_> {
    fn variable(&self, key: &str) -> Option<&str> {
        match self.values_of(key) {
            Values::One(v) => Some(v),
            Values::Many([v]) => Some(v),
            Values::Many(_) => None,
        }
    }
}
