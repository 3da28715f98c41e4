//! Each operator, and AWS's documented edge cases: missing keys with and without `IfExists`,
//! negated operators, multi-valued keys with and without set qualifiers.

use super::*;
use crate::context::{ConditionValues, Principal};

fn compile(op: &str, key: &str, values: &[&str]) -> Result<Condition, String> {
    let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
    Condition::compile(Operator::parse(op)?, key, &values, true)
}

fn holds_for(principal: &Principal, op: &str, key: &str, values: &[&str], ctx: &ConditionValues) -> bool {
    let c = compile(op, key, values).expect("condition");
    let r = Request { action: "s3:GetObject", resource: Some("arn:aws:s3:::b/k"), principal, values: ctx };
    c.holds(&r)
}

fn holds(op: &str, key: &str, values: &[&str], ctx: &ConditionValues) -> bool {
    holds_for(&Principal::user("alice", "AKIAALICE"), op, key, values, ctx)
}

fn one(key: &str, value: &str) -> ConditionValues {
    ConditionValues::new().with(key, value)
}

fn none() -> ConditionValues {
    ConditionValues::new()
}

#[test]
fn string_operators() {
    let ctx = one("s3:prefix", "Home/alice/");
    assert!(holds("StringEquals", "s3:prefix", &["Home/alice/"], &ctx));
    assert!(!holds("StringEquals", "s3:prefix", &["home/alice/"], &ctx), "case-sensitive");
    assert!(holds("StringEquals", "s3:prefix", &["x", "Home/alice/"], &ctx), "values are alternatives");
    assert!(!holds("StringEquals", "s3:prefix", &["Home/*"], &ctx), "no wildcards in StringEquals");
    assert!(holds("StringNotEquals", "s3:prefix", &["x", "y"], &ctx));
    assert!(!holds("StringNotEquals", "s3:prefix", &["x", "Home/alice/"], &ctx));
    assert!(holds("StringEqualsIgnoreCase", "s3:prefix", &["HOME/ALICE/"], &ctx));
    assert!(!holds("StringNotEqualsIgnoreCase", "s3:prefix", &["home/alice/"], &ctx));
    assert!(holds("StringNotEqualsIgnoreCase", "s3:prefix", &["home/bob/"], &ctx));
    assert!(holds("StringLike", "s3:prefix", &["Home/*/"], &ctx));
    assert!(holds("StringLike", "s3:prefix", &["Home/?lice/"], &ctx));
    assert!(!holds("StringLike", "s3:prefix", &["home/*"], &ctx));
    assert!(holds("StringNotLike", "s3:prefix", &["Work/*"], &ctx));
    assert!(!holds("StringNotLike", "s3:prefix", &["Work/*", "Home/*"], &ctx));
}

#[test]
fn variables_in_values() {
    let ctx = one("s3:prefix", "home/alice/photos");
    assert!(holds("StringLike", "s3:prefix", &["home/${aws:username}/*"], &ctx));
    let bob = Principal::user("bob", "AKIABOB");
    assert!(!holds_for(&bob, "StringLike", "s3:prefix", &["home/${aws:username}/*"], &ctx));
    let anonymous = Principal::anonymous();
    assert!(!holds_for(&anonymous, "StringLike", "s3:prefix", &["home/${aws:username}/*"], &ctx));
}

/// "If the key that you specify in a policy condition is not present in the request context,
/// the values do not match and the condition is false. If the policy condition requires that
/// the key is not matched, such as StringNotLike or ArnNotLike, and the right key is not
/// present, the condition is true" — every operator but `...IfExists` and `Null`.
#[test]
fn missing_keys() {
    let positive = [
        ("StringEquals", "x"),
        ("StringEqualsIgnoreCase", "x"),
        ("StringLike", "*"),
        ("NumericEquals", "1"),
        ("NumericLessThan", "1"),
        ("NumericGreaterThanEquals", "1"),
        ("DateLessThan", "2030-01-01T00:00:00Z"),
        ("DateEquals", "0"),
        ("Bool", "true"),
        ("IpAddress", "0.0.0.0/0"),
        ("ArnLike", "arn:*:*:*:*:*"),
        ("ArnEquals", "arn:aws:s3:::b"),
    ];
    for (op, value) in positive {
        assert!(!holds(op, "s3:x-amz-acl", &[value], &none()), "{op} on a missing key is false");
        assert!(holds(&format!("{op}IfExists"), "s3:x-amz-acl", &[value], &none()), "{op}IfExists is true");
    }
    let negated = [
        ("StringNotEquals", "x"),
        ("StringNotEqualsIgnoreCase", "x"),
        ("StringNotLike", "*"),
        ("NumericNotEquals", "1"),
        ("DateNotEquals", "0"),
        ("NotIpAddress", "10.0.0.0/8"),
        ("ArnNotLike", "arn:*:*:*:*:*"),
        ("ArnNotEquals", "arn:aws:s3:::b"),
    ];
    for (op, value) in negated {
        assert!(holds(op, "s3:x-amz-acl", &[value], &none()), "{op} on a missing key is true");
        assert!(holds(&format!("{op}IfExists"), "s3:x-amz-acl", &[value], &none()));
    }
    // Present keys: IfExists changes nothing.
    let ctx = one("s3:x-amz-acl", "private");
    assert!(!holds("StringEqualsIfExists", "s3:x-amz-acl", &["public-read"], &ctx));
    assert!(holds("StringEqualsIfExists", "s3:x-amz-acl", &["private"], &ctx));
}

#[test]
fn numeric_operators() {
    let ctx = one("s3:max-keys", "10");
    let cases = [
        ("NumericEquals", "10", true),
        ("NumericEquals", "10.0", true),
        ("NumericEquals", "9", false),
        ("NumericNotEquals", "9", true),
        ("NumericNotEquals", "10", false),
        ("NumericLessThan", "11", true),
        ("NumericLessThan", "10", false),
        ("NumericLessThanEquals", "10", true),
        ("NumericLessThanEquals", "9", false),
        ("NumericGreaterThan", "9", true),
        ("NumericGreaterThan", "10", false),
        ("NumericGreaterThanEquals", "10", true),
        ("NumericGreaterThanEquals", "11", false),
    ];
    for (op, value, want) in cases {
        assert_eq!(holds(op, "s3:max-keys", &[value], &ctx), want, "{op} {value}");
    }
    let junk = one("s3:max-keys", "ten");
    assert!(!holds("NumericLessThan", "s3:max-keys", &["100"], &junk), "an unparseable value never matches");
    assert!(!holds("NumericGreaterThanEquals", "s3:max-keys", &["0"], &junk));
}

#[test]
fn date_operators() {
    // 2023-11-14T22:13:20Z = 1700000000.
    let iso = one("aws:CurrentTime", "2023-11-14T22:13:20Z");
    let epoch = one("aws:EpochTime", "1700000000");
    for (key, ctx) in [("aws:CurrentTime", &iso), ("aws:EpochTime", &epoch)] {
        assert!(holds("DateEquals", key, &["2023-11-14T22:13:20Z"], ctx), "{key}");
        assert!(holds("DateEquals", key, &["1700000000"], ctx), "{key}");
        assert!(holds("DateEquals", key, &["2023-11-15T00:13:20+02:00"], ctx), "{key}");
        assert!(holds("DateNotEquals", key, &["2023-11-14"], ctx), "{key}");
        assert!(holds("DateLessThan", key, &["2023-11-14T22:13:21Z"], ctx), "{key}");
        assert!(!holds("DateLessThan", key, &["2023-11-14T22:13:20Z"], ctx), "{key}");
        assert!(holds("DateLessThanEquals", key, &["1700000000"], ctx), "{key}");
        assert!(holds("DateGreaterThan", key, &["2023-11-14"], ctx), "{key}");
        assert!(holds("DateGreaterThan", key, &["2024"], ctx), "{key}: 2024 is epoch seconds, not a year");
        assert!(holds("DateGreaterThanEquals", key, &["2023-11-14T22:13:20Z"], ctx), "{key}");
        assert!(!holds("DateGreaterThanEquals", key, &["2023-12"], ctx), "{key}");
    }
}

#[test]
fn bool_and_null() {
    let https = one("aws:SecureTransport", "true");
    let http = one("aws:SecureTransport", "false");
    assert!(holds("Bool", "aws:SecureTransport", &["true"], &https));
    assert!(holds("Bool", "aws:SecureTransport", &["TRUE"], &https));
    assert!(!holds("Bool", "aws:SecureTransport", &["true"], &http));
    assert!(holds("Bool", "aws:SecureTransport", &["false"], &http));
    assert!(!holds("Bool", "aws:SecureTransport", &["false"], &none()));
    assert!(holds("BoolIfExists", "aws:SecureTransport", &["false"], &none()));
    assert!(holds("Null", "s3:x-amz-server-side-encryption", &["true"], &none()));
    assert!(!holds("Null", "s3:x-amz-server-side-encryption", &["false"], &none()));
    let sse = one("s3:x-amz-server-side-encryption", "AES256");
    assert!(!holds("Null", "s3:x-amz-server-side-encryption", &["true"], &sse));
    assert!(holds("Null", "s3:x-amz-server-side-encryption", &["false"], &sse));
    // Principal keys: present for users, absent for anonymous.
    assert!(holds("Null", "aws:username", &["false"], &none()));
    assert!(holds_for(&Principal::anonymous(), "Null", "aws:username", &["true"], &none()));
}

#[test]
fn ip_operators() {
    let v4 = one("aws:SourceIp", "192.0.2.10");
    let v6 = one("aws:SourceIp", "2001:db8::5");
    assert!(holds("IpAddress", "aws:SourceIp", &["192.0.2.0/24"], &v4));
    assert!(holds("IpAddress", "aws:SourceIp", &["10.0.0.0/8", "192.0.2.10"], &v4));
    assert!(!holds("IpAddress", "aws:SourceIp", &["10.0.0.0/8"], &v4));
    assert!(holds("NotIpAddress", "aws:SourceIp", &["10.0.0.0/8"], &v4));
    assert!(!holds("NotIpAddress", "aws:SourceIp", &["192.0.2.0/24"], &v4));
    assert!(holds("IpAddress", "aws:SourceIp", &["2001:db8::/32"], &v6));
    assert!(!holds("IpAddress", "aws:SourceIp", &["192.0.2.0/24"], &v6));
    assert!(holds("NotIpAddress", "aws:SourceIp", &["192.0.2.0/24", "10.0.0.0/8"], &v6));
    let junk = one("aws:SourceIp", "not-an-ip");
    assert!(!holds("IpAddress", "aws:SourceIp", &["0.0.0.0/0"], &junk));
}

#[test]
fn arn_operators() {
    // aws:PrincipalArn of alice is arn:aws:iam:::user/alice.
    for op in ["ArnLike", "ArnEquals"] {
        assert!(holds(op, "aws:PrincipalArn", &["arn:aws:iam:::user/*"], &none()), "{op}");
        assert!(holds(op, "aws:PrincipalArn", &["arn:aws:iam:::user/alice"], &none()), "{op}");
        assert!(holds(op, "aws:PrincipalArn", &["arn:*:iam::*:user/al?ce"], &none()), "{op}");
        assert!(!holds(op, "aws:PrincipalArn", &["arn:aws:iam:::user/b*"], &none()), "{op}");
        assert!(!holds(op, "aws:PrincipalArn", &["arn:aws:s3:::user/alice"], &none()), "{op}");
    }
    // Each of the six parts is matched on its own.
    assert!(holds("ArnLike", "aws:PrincipalArn", &["arn:aws:*:::user/alice"], &none()));
    assert!(
        !holds("ArnLike", "aws:PrincipalArn", &["arn:aws:*::?:user/alice"], &none()),
        "the account is empty"
    );
    assert!(holds("ArnNotLike", "aws:PrincipalArn", &["arn:aws:iam:::user/b*"], &none()));
    assert!(!holds("ArnNotEquals", "aws:PrincipalArn", &["arn:aws:iam:::user/alice"], &none()));
    let junk = one("s3:x-amz-copy-source", "b/k");
    assert!(!holds("ArnLike", "s3:x-amz-copy-source", &["arn:*:*:*:*:*"], &junk));
}

/// ForAllValues is true when every request value matches (and for none); ForAnyValue when one
/// does (false for none). A value passes a negated operator when it matches no policy value.
#[test]
fn set_qualifiers() {
    let tags = |keys: &[&str]| {
        let mut ctx = ConditionValues::new();
        for k in keys {
            ctx.insert("s3:RequestObjectTagKeys", *k);
        }
        ctx
    };
    let allowed = ["project", "owner"];
    let all = "ForAllValues:StringEquals";
    let any = "ForAnyValue:StringEquals";
    assert!(holds(all, "s3:RequestObjectTagKeys", &allowed, &tags(&["project", "owner"])));
    assert!(holds(all, "s3:RequestObjectTagKeys", &allowed, &tags(&["owner"])));
    assert!(!holds(all, "s3:RequestObjectTagKeys", &allowed, &tags(&["owner", "cost"])));
    assert!(holds(all, "s3:RequestObjectTagKeys", &allowed, &none()), "ForAllValues of nothing is true");
    assert!(!holds(&format!("{all}IfExists"), "s3:RequestObjectTagKeys", &allowed, &tags(&["cost"])));
    assert!(holds(any, "s3:RequestObjectTagKeys", &allowed, &tags(&["cost", "owner"])));
    assert!(!holds(any, "s3:RequestObjectTagKeys", &allowed, &tags(&["cost"])));
    assert!(!holds(any, "s3:RequestObjectTagKeys", &allowed, &none()), "ForAnyValue of nothing is false");
    assert!(holds(&format!("{any}IfExists"), "s3:RequestObjectTagKeys", &allowed, &none()));
    // Negated: "none of the values is one of these" and "some value is not one of these".
    let all_not = "ForAllValues:StringNotEquals";
    let any_not = "ForAnyValue:StringNotEquals";
    assert!(holds(all_not, "s3:RequestObjectTagKeys", &allowed, &tags(&["cost", "team"])));
    assert!(!holds(all_not, "s3:RequestObjectTagKeys", &allowed, &tags(&["cost", "owner"])));
    assert!(holds(all_not, "s3:RequestObjectTagKeys", &allowed, &none()));
    assert!(holds(any_not, "s3:RequestObjectTagKeys", &allowed, &tags(&["owner", "cost"])));
    assert!(!holds(any_not, "s3:RequestObjectTagKeys", &allowed, &tags(&["owner"])));
    assert!(!holds(any_not, "s3:RequestObjectTagKeys", &allowed, &none()));
    // Without a qualifier a multi-valued key matches when any value does.
    assert!(holds("StringEquals", "s3:RequestObjectTagKeys", &["owner"], &tags(&["cost", "owner"])));
    assert!(!holds("StringNotEquals", "s3:RequestObjectTagKeys", &["owner"], &tags(&["cost", "owner"])));
    assert!(holds("ForAnyValue:StringLike", "s3:RequestObjectTagKeys", &["pro*"], &tags(&["x", "project"])));
}

#[test]
fn keys_are_case_insensitive_but_tag_keys_are_not() {
    let ctx = one("aws:sourceip", "10.1.2.3");
    assert!(holds("IpAddress", "AWS:SourceIP", &["10.0.0.0/8"], &ctx));
    let ctx = one("S3:ExistingObjectTag/Project", "blue");
    assert!(holds("StringEquals", "s3:existingobjecttag/Project", &["blue"], &ctx));
    assert!(!holds("StringEquals", "s3:ExistingObjectTag/project", &["blue"], &ctx));
    assert!(holds("StringEquals", "aws:PRINCIPALTYPE", &["User"], &none()));
    assert!(holds("StringEquals", "aws:userid", &["AKIAALICE"], &none()));
}

#[test]
fn bad_conditions_are_refused() {
    let err = |op: &str, key: &str, values: &[&str]| compile(op, key, values).expect_err("refused");
    assert_eq!(err("StringLikee", "s3:prefix", &["a"]), "unknown condition operator");
    assert_eq!(err("ForSomeValues:StringLike", "s3:prefix", &["a"]), "unknown condition operator");
    assert!(err("NullIfExists", "s3:prefix", &["true"]).contains("Null takes"));
    assert!(err("ForAnyValue:Null", "s3:prefix", &["true"]).contains("Null takes"));
    assert_eq!(err("StringEquals", "s3:prefixx", &["a"]), "unknown condition key");
    assert_eq!(err("StringEquals", "ec2:Region", &["a"]), "unknown condition key");
    assert_eq!(err("StringEquals", "s3:ExistingObjectTag/", &["a"]), "unknown condition key");
    assert!(err("NumericLessThan", "s3:max-keys", &["ten"]).contains("not a number"));
    assert!(err("DateLessThan", "aws:CurrentTime", &["soon"]).contains("ISO 8601"));
    assert!(err("IpAddress", "aws:SourceIp", &["10.0.0.0/33"]).contains("CIDR"));
    assert!(err("Bool", "aws:SecureTransport", &["yes"]).contains("true or false"));
    assert!(err("ArnLike", "aws:PrincipalArn", &["user/alice"]).contains("not an ARN"));
    assert!(err("Null", "s3:prefix", &["true", "false"]).contains("one value"));
    assert!(err("StringEquals", "s3:prefix", &[]).contains("at least one value"));
    assert!(err("StringEquals", "s3:prefix", &["${aws:username"]).contains("unterminated"));
    assert!(compile("StringEquals", "jwt:groups", &["a"]).is_ok(), "OpenID claims are free");
}
