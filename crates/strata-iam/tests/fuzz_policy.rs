//! Never-panic fuzzing of the policy parser and evaluator: policy documents arrive from users
//! (PutBucketPolicy, the admin API), so mutated JSON must be refused or compiled, never crash,
//! and a compiled policy must evaluate any request without panicking.

use std::cell::Cell;

use strata_iam::{evaluate, evaluate_narrowed, ConditionValues, Policy, PolicyKind, Principal, Request};

const CORPUS: &[&str] = &[
    r#"{"Version":"2012-10-17","Statement":[{"Sid":"a","Effect":"Allow","Action":["s3:GetObject","s3:List*"],"Resource":["arn:aws:s3:::b/${aws:username}/*","arn:aws:s3:::b"],"Condition":{"StringLike":{"s3:prefix":["home/${aws:username}/*","${*}${?}${$}"]},"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]},"NumericLessThanEquals":{"s3:max-keys":"100"}}}]}"#,
    r#"{"Version":"2012-10-17","Id":"p","Statement":{"Effect":"Deny","NotAction":"s3:Get*","NotResource":"arn:aws:s3:::b/*","Condition":{"DateGreaterThan":{"aws:CurrentTime":"2023-11-14T22:13:20+02:00"},"DateLessThanEquals":{"aws:EpochTime":1700000000},"Bool":{"aws:SecureTransport":false},"Null":{"s3:x-amz-server-side-encryption":"true"}}}}"#,
    r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*","arn:aws:iam:::user/alice"]},"Action":"s3:*","Resource":"arn:aws:s3:::b/*","Condition":{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["a","b"]},"ForAnyValue:StringNotLikeIfExists":{"s3:ExistingObjectTag/Project":"x*"},"ArnLike":{"aws:PrincipalArn":"arn:aws:iam:::user/*"},"NotIpAddress":{"aws:SourceIp":"192.0.2.1"}}},{"Effect":"Deny","NotPrincipal":{"AWS":"arn:aws:iam:::user/alice"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::b/*"}]}"#,
    r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"*","Condition":{"StringEqualsIgnoreCase":{"s3:x-amz-acl":["Private",3,true]},"NumericGreaterThan":{"s3:max-keys":-1.5e2}}}]}"#,
];

fn requests() -> Vec<(Principal, ConditionValues, Option<&'static str>)> {
    let values = ConditionValues::new()
        .with("aws:SourceIp", "10.1.2.3")
        .with("aws:SourceIp", "::ffff:10.0.0.1")
        .with("aws:CurrentTime", "2024-01-01T00:00:00Z")
        .with("aws:EpochTime", "1704067200")
        .with("aws:SecureTransport", "true")
        .with("s3:prefix", "home/alice/x")
        .with("s3:max-keys", "50")
        .with("s3:RequestObjectTagKeys", "a")
        .with("s3:ExistingObjectTag/Project", "xyz");
    let junk = ConditionValues::new()
        .with("aws:SourceIp", "not an address")
        .with("aws:CurrentTime", "yesterday")
        .with("s3:max-keys", "many")
        .with("s3:prefix", "\u{0}é*?");
    vec![
        (Principal::user("alice", "AKIA"), values.clone(), Some("arn:aws:s3:::b/alice/x")),
        (Principal::anonymous(), junk, Some("arn:aws:s3:::b")),
        (Principal::assumed_role("bob", "ASIA", "s"), values, None),
    ]
}

#[test]
fn fuzz_policy_documents() {
    let corpus: Vec<&[u8]> = CORPUS.iter().map(|d| d.as_bytes()).collect();
    for doc in &corpus {
        let identity = Policy::parse(doc, PolicyKind::Identity);
        let bucket = Policy::parse(doc, PolicyKind::Bucket("b"));
        assert!(identity.is_ok() || bucket.is_ok(), "corpus entry parses: {identity:?} {bucket:?}");
    }
    let requests = requests();
    let (inputs, compiled) = (Cell::new(0u64), Cell::new(0u64));
    strata_types::fuzz::run("policy", &corpus, |bytes| {
        inputs.set(inputs.get() + 1);
        for kind in [PolicyKind::Identity, PolicyKind::Bucket("b")] {
            let Ok(policy) = Policy::parse(bytes, kind) else { continue };
            compiled.set(compiled.get() + 1);
            for (principal, values, resource) in &requests {
                for action in ["s3:GetObject", "s3:ListBucket", "admin:ServerInfo"] {
                    let request = Request { action, resource: *resource, principal, values };
                    let _ = evaluate(&request, [&policy], Some(&policy));
                    let _ = evaluate_narrowed(&request, [&policy], None, Some(&policy));
                }
            }
        }
    });
    // Most byte mutations break the JSON; enough must still reach the evaluator.
    assert!(compiled.get() * 200 > inputs.get(), "{} of {} inputs compiled", compiled.get(), inputs.get());
}

/// Every operator, resource and action position of a document.
const POSITIONS: &[&str] = &[
    "StringLike",
    "StringEqualsIgnoreCase",
    "NumericLessThan",
    "DateGreaterThanEquals",
    "Bool",
    "IpAddress",
    "NotIpAddress",
    "ArnLike",
    "Null",
    "ForAllValues:StringNotEquals",
    "ForAnyValue:DateEqualsIfExists",
];

/// Mutated text in every value position of a valid document: reaches the typed parsers (dates,
/// CIDRs, numbers, ARNs, variables) and the matchers far more often than whole-document mutation.
#[test]
fn fuzz_policy_values() {
    let corpus: &[&[u8]] = &[
        b"home/${aws:username}/*",
        b"2023-11-14T22:13:20.123+02:00",
        b"1700000000",
        b"10.0.0.0/8",
        b"2001:db8::/32",
        b"arn:aws:iam:::user/a?ice",
        b"true",
        b"-1.5e2",
        b"${*}${?}${$}*?",
        b"arn:aws:s3:::b/${s3:prefix}/*",
    ];
    let requests = requests();
    let (inputs, compiled) = (Cell::new(0u64), Cell::new(0u64));
    strata_types::fuzz::run("policy values", corpus, |bytes| {
        inputs.set(inputs.get() + 1);
        let text = String::from_utf8_lossy(bytes);
        let json = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let (value, resource, action) =
            (json(&text), json(&format!("arn:aws:s3:::{text}")), json(&format!("s3:{text}")));
        for op in POSITIONS {
            let key = match *op {
                "NumericLessThan" => "s3:max-keys",
                "IpAddress" | "NotIpAddress" => "aws:SourceIp",
                "ArnLike" => "aws:PrincipalArn",
                "Bool" => "aws:SecureTransport",
                _ if op.contains("Date") => "aws:CurrentTime",
                _ => "s3:prefix",
            };
            // The text in a condition, and (once per input) as a resource and as an action.
            let (action, resource) = match *op {
                "StringLike" => ("\"s3:Get*\"", resource.as_str()),
                "Bool" => (action.as_str(), "\"*\""),
                _ => ("\"s3:Get*\"", "\"arn:aws:s3:::b/*\""),
            };
            let doc = format!(
                r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":{action},"Resource":{resource},"Condition":{{"{op}":{{"{key}":[{value},"x"]}}}}}}]}}"#
            );
            let Ok(policy) = Policy::parse(doc.as_bytes(), PolicyKind::Identity) else { continue };
            compiled.set(compiled.get() + 1);
            for (principal, values, resource) in &requests {
                let request = Request { action: "s3:GetObject", resource: *resource, principal, values };
                let _ = evaluate(&request, [&policy], None);
            }
        }
    });
    eprintln!("{} compiled of {} inputs", compiled.get(), inputs.get());
    assert!(
        compiled.get() > inputs.get(),
        "{} compiled of {} inputs × {} positions",
        compiled.get(),
        inputs.get(),
        POSITIONS.len()
    );
}
