//! The evaluation scenarios AWS documents for IAM and S3 policies (explicit deny, NotAction,
//! NotResource, conditions, variables, bucket policies and anonymous access, narrowing), as one
//! table: policies, a request, the decision AWS's rules give. The policies are written here in
//! the spirit of AWS's examples.

use strata_iam::{evaluate_narrowed, ConditionValues, Decision, Policy, PolicyKind, Principal, Request};

struct Example {
    name: &'static str,
    identity: &'static [&'static str],
    bucket: Option<&'static str>,
    session: Option<&'static str>,
    principal: fn() -> Principal,
    action: &'static str,
    resource: Option<&'static str>,
    values: &'static [(&'static str, &'static str)],
    want: Decision,
}

fn alice() -> Principal {
    Principal::user("alice", "AKIAALICE")
}

fn anonymous() -> Principal {
    Principal::anonymous()
}

const ALLOW_S3: &str =
    r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#;
const DENY_DELETE: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:Delete*","Resource":"arn:aws:s3:::prod/*"}]}"#;
const ALL_BUT_ADMIN: &str =
    r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","NotAction":"admin:*","Resource":"*"}]}"#;
const ONLY_OVER_TLS: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}"#;
const NOTHING_OUTSIDE_PROD: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:*","NotResource":["arn:aws:s3:::prod","arn:aws:s3:::prod/*"]}]}"#;
const OFFICE_ONLY: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":["203.0.113.0/24","2001:db8::/32"]}}}]}"#;
const HOME: &str = r#"{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::home","Condition":{"StringLike":{"s3:prefix":["","home/","home/${aws:username}/*"]}}},
  {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::home/home/${aws:username}/*"}]}"#;
const REQUIRE_SSE: &str = r#"{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::vault/*"},
  {"Effect":"Deny","Action":"s3:PutObject","Resource":"arn:aws:s3:::vault/*","Condition":{"StringNotEquals":{"s3:x-amz-server-side-encryption":"AES256"}}}]}"#;
const TAGGED_PUBLIC: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"StringEquals":{"s3:ExistingObjectTag/classification":"public"}}}]}"#;
const OFFICE_HOURS: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"DateGreaterThan":{"aws:CurrentTime":"2026-01-01T00:00:00Z"},"DateLessThan":{"aws:CurrentTime":"2026-07-01T00:00:00Z"}}}]}"#;
const ALLOWED_TAG_KEYS: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:PutObjectTagging","Resource":"*","Condition":{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["project","owner"]}}}]}"#;
const PUBLIC_READ: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/*"}]}"#;
const SITE_FOR_ALICE: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/alice"},"Action":["s3:PutObject","s3:GetObject"],"Resource":"arn:aws:s3:::site/*"}]}"#;
const SITE_ONLY_FROM_OFFICE: &str = r#"{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/*"},
  {"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::site/*","Condition":{"NotIpAddress":{"aws:SourceIp":"203.0.113.0/24"}}}]}"#;
const SESSION_READ: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::prod/*"}]}"#;

fn examples() -> Vec<Example> {
    let base = || Example {
        name: "",
        identity: &[],
        bucket: None,
        session: None,
        principal: alice,
        action: "s3:GetObject",
        resource: Some("arn:aws:s3:::prod/report.csv"),
        values: &[],
        want: Decision::Allow,
    };
    vec![
        Example { name: "an allow grants", identity: &[ALLOW_S3], ..base() },
        Example { name: "nothing allows: implicit deny", want: Decision::ImplicitDeny, ..base() },
        Example {
            name: "an explicit deny in another policy wins",
            identity: &[ALLOW_S3, DENY_DELETE],
            action: "s3:DeleteObject",
            want: Decision::ExplicitDeny,
            ..base()
        },
        Example { name: "the deny covers only its actions", identity: &[ALLOW_S3, DENY_DELETE], ..base() },
        Example { name: "NotAction allows all other actions", identity: &[ALL_BUT_ADMIN], ..base() },
        Example {
            name: "NotAction does not allow the named ones",
            identity: &[ALL_BUT_ADMIN],
            action: "admin:CreateUser",
            resource: None,
            want: Decision::ImplicitDeny,
            ..base()
        },
        Example {
            name: "a condition deny (plain HTTP) beats an allow",
            identity: &[ALLOW_S3, ONLY_OVER_TLS],
            values: &[("aws:SecureTransport", "false")],
            want: Decision::ExplicitDeny,
            ..base()
        },
        Example {
            name: "the same over TLS",
            identity: &[ALLOW_S3, ONLY_OVER_TLS],
            values: &[("aws:SecureTransport", "true")],
            ..base()
        },
        Example {
            name: "NotResource deny: outside prod is refused",
            identity: &[ALLOW_S3, NOTHING_OUTSIDE_PROD],
            resource: Some("arn:aws:s3:::dev/x"),
            want: Decision::ExplicitDeny,
            ..base()
        },
        Example {
            name: "NotResource deny: prod is not",
            identity: &[ALLOW_S3, NOTHING_OUTSIDE_PROD],
            ..base()
        },
        Example {
            name: "source address in the office (IPv6)",
            identity: &[OFFICE_ONLY],
            values: &[("aws:SourceIp", "2001:db8::1")],
            ..base()
        },
        Example {
            name: "source address outside the office",
            identity: &[OFFICE_ONLY],
            values: &[("aws:SourceIp", "198.51.100.1")],
            want: Decision::ImplicitDeny,
            ..base()
        },
        Example {
            name: "home folder: own objects",
            identity: &[HOME],
            resource: Some("arn:aws:s3:::home/home/alice/a.txt"),
            ..base()
        },
        Example {
            name: "home folder: another user's objects",
            identity: &[HOME],
            resource: Some("arn:aws:s3:::home/home/bob/a.txt"),
            want: Decision::ImplicitDeny,
            ..base()
        },
        Example {
            name: "home folder: listing the own prefix",
            identity: &[HOME],
            action: "s3:ListBucket",
            resource: Some("arn:aws:s3:::home"),
            values: &[("s3:prefix", "home/alice/"), ("s3:delimiter", "/")],
            ..base()
        },
        Example {
            name: "home folder: listing the bucket root",
            identity: &[HOME],
            action: "s3:ListBucket",
            resource: Some("arn:aws:s3:::home"),
            values: &[("s3:prefix", "")],
            ..base()
        },
        Example {
            name: "encryption required: with it",
            identity: &[REQUIRE_SSE],
            action: "s3:PutObject",
            resource: Some("arn:aws:s3:::vault/k"),
            values: &[("s3:x-amz-server-side-encryption", "AES256")],
            ..base()
        },
        Example {
            name: "encryption required: without it (a missing key satisfies StringNotEquals)",
            identity: &[REQUIRE_SSE],
            action: "s3:PutObject",
            resource: Some("arn:aws:s3:::vault/k"),
            want: Decision::ExplicitDeny,
            ..base()
        },
        Example {
            name: "object tag condition holds",
            identity: &[TAGGED_PUBLIC],
            values: &[("s3:ExistingObjectTag/classification", "public")],
            ..base()
        },
        Example {
            name: "object tag condition fails",
            identity: &[TAGGED_PUBLIC],
            values: &[("s3:ExistingObjectTag/classification", "secret")],
            want: Decision::ImplicitDeny,
            ..base()
        },
        Example {
            name: "inside the time window",
            identity: &[OFFICE_HOURS],
            values: &[("aws:CurrentTime", "2026-03-01T12:00:00Z")],
            ..base()
        },
        Example {
            name: "after the time window",
            identity: &[OFFICE_HOURS],
            values: &[("aws:CurrentTime", "2026-11-23T12:00:00Z")],
            want: Decision::ImplicitDeny,
            ..base()
        },
        Example {
            name: "only allowed tag keys",
            identity: &[ALLOWED_TAG_KEYS],
            action: "s3:PutObjectTagging",
            values: &[("s3:RequestObjectTagKeys", "project"), ("s3:RequestObjectTagKeys", "owner")],
            ..base()
        },
        Example {
            name: "one tag key not allowed",
            identity: &[ALLOWED_TAG_KEYS],
            action: "s3:PutObjectTagging",
            values: &[("s3:RequestObjectTagKeys", "project"), ("s3:RequestObjectTagKeys", "cost")],
            want: Decision::ImplicitDeny,
            ..base()
        },
        Example {
            name: "public read: anonymous GET",
            bucket: Some(PUBLIC_READ),
            principal: anonymous,
            resource: Some("arn:aws:s3:::site/index.html"),
            ..base()
        },
        Example {
            name: "public read: anonymous PUT",
            bucket: Some(PUBLIC_READ),
            principal: anonymous,
            action: "s3:PutObject",
            resource: Some("arn:aws:s3:::site/index.html"),
            want: Decision::ImplicitDeny,
            ..base()
        },
        Example {
            name: "a bucket policy naming the user grants without an identity policy",
            bucket: Some(SITE_FOR_ALICE),
            action: "s3:PutObject",
            resource: Some("arn:aws:s3:::site/a"),
            ..base()
        },
        Example {
            name: "an identity deny beats the bucket policy's allow",
            identity: &[NOTHING_OUTSIDE_PROD],
            bucket: Some(SITE_FOR_ALICE),
            resource: Some("arn:aws:s3:::site/a"),
            want: Decision::ExplicitDeny,
            ..base()
        },
        Example {
            name: "a bucket policy's deny beats the identity's allow",
            identity: &[ALLOW_S3],
            bucket: Some(SITE_ONLY_FROM_OFFICE),
            resource: Some("arn:aws:s3:::site/a"),
            values: &[("aws:SourceIp", "198.51.100.1")],
            want: Decision::ExplicitDeny,
            ..base()
        },
        Example {
            name: "session policy narrows the parent's rights",
            identity: &[ALLOW_S3],
            session: Some(SESSION_READ),
            action: "s3:PutObject",
            want: Decision::ImplicitDeny,
            ..base()
        },
        Example { name: "within both", identity: &[ALLOW_S3], session: Some(SESSION_READ), ..base() },
    ]
}

#[test]
fn aws_evaluation_examples() {
    for ex in examples() {
        let identity: Vec<Policy> = ex
            .identity
            .iter()
            .map(|d| Policy::parse(d.as_bytes(), PolicyKind::Identity).expect("identity policy"))
            .collect();
        let bucket_name = ex
            .resource
            .and_then(|r| r.strip_prefix("arn:aws:s3:::"))
            .map(|r| r.split('/').next().unwrap_or(r));
        let bucket = ex.bucket.map(|d| {
            Policy::parse(d.as_bytes(), PolicyKind::Bucket(bucket_name.expect("a bucket")))
                .expect("bucket policy")
        });
        let session =
            ex.session.map(|d| Policy::parse(d.as_bytes(), PolicyKind::Identity).expect("session policy"));
        let mut values = ConditionValues::new();
        for (k, v) in ex.values {
            values.insert(k, *v);
        }
        let principal = (ex.principal)();
        let request =
            Request { action: ex.action, resource: ex.resource, principal: &principal, values: &values };
        let got = evaluate_narrowed(&request, identity.iter(), bucket.as_ref(), session.as_ref());
        assert_eq!(got, ex.want, "{}", ex.name);
    }
}
