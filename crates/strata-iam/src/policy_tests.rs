//! Parsing (forms, errors and where they are), size limits, and evaluation as AWS documents it.

use super::*;
use crate::context::{ConditionValues, Principal};
use crate::eval::{evaluate, evaluate_narrowed, Decision};

fn identity(doc: &str) -> Policy {
    Policy::parse(doc.as_bytes(), PolicyKind::Identity).expect("policy")
}

fn bucket(doc: &str) -> Policy {
    Policy::parse(doc.as_bytes(), PolicyKind::Bucket("photos")).expect("policy")
}

fn error(doc: &str, kind: PolicyKind) -> String {
    Policy::parse(doc.as_bytes(), kind).expect_err("refused").to_string()
}

struct Ask<'a> {
    action: &'a str,
    resource: Option<&'a str>,
    principal: Principal,
    values: ConditionValues,
}

impl<'a> Ask<'a> {
    fn new(action: &'a str, resource: &'a str) -> Ask<'a> {
        Ask {
            action,
            resource: Some(resource),
            principal: Principal::user("alice", "AKIAALICE"),
            values: ConditionValues::new(),
        }
    }
    fn by(mut self, principal: Principal) -> Self {
        self.principal = principal;
        self
    }
    fn with(mut self, key: &str, value: &str) -> Self {
        self.values.insert(key, value);
        self
    }
    fn request(&self) -> Request<'_> {
        Request {
            action: self.action,
            resource: self.resource,
            principal: &self.principal,
            values: &self.values,
        }
    }
    fn against(&self, identity: &[&Policy], bucket: Option<&Policy>) -> Decision {
        evaluate(&self.request(), identity.iter().copied(), bucket)
    }
}

const HOME: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "List", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::home",
     "Condition": {"StringLike": {"s3:prefix": ["", "home/", "home/${aws:username}/*"]}}},
    {"Sid": "Own", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
     "Resource": "arn:aws:s3:::home/home/${aws:username}/*"}
  ]
}"#;

#[test]
fn forms_parse() {
    let p = identity(HOME);
    assert_eq!(p.version, Version::V2012_10_17);
    assert_eq!(p.sids().collect::<Vec<_>>(), vec![Some("List"), Some("Own")]);
    let single = identity(
        r#"{"Version":"2012-10-17","Id":"x","Statement":{"Effect":"Deny","NotAction":"s3:Get*","NotResource":"*"}}"#,
    );
    assert_eq!((single.id.as_deref(), single.statements.len()), (Some("x"), 1));
    let old = identity(
        r#"{"Statement":[{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::a/${aws:username}"}]}"#,
    );
    assert_eq!(old.version, Version::V2008_10_17);
    // In 2008-10-17 a variable is plain text.
    let plain = Ask::new("s3:GetObject", "arn:aws:s3:::a/${aws:username}");
    assert_eq!(plain.against(&[&old], None), Decision::Allow);
    assert_eq!(
        Ask::new("s3:GetObject", "arn:aws:s3:::a/alice").against(&[&old], None),
        Decision::ImplicitDeny
    );
}

#[test]
fn errors_say_where() {
    let st = |body: &str| {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}},{body}]}}"#
        )
    };
    let cases = [
        (st(r#"{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"StringLikee":{"s3:prefix":"a"}}}"#),
         "Statement[1].Condition.StringLikee: unknown condition operator"),
        (st(r#"{"Effect":"allow","Action":"*","Resource":"*"}"#), "Statement[1].Effect: must be \"Allow\" or \"Deny\""),
        (st(r#"{"Action":"*","Resource":"*"}"#), "Statement[1].Effect: required"),
        (st(r#"{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjct"],"Resource":"*"}"#),
         "Statement[1].Action[1]: unknown action \"s3:GetObjct\""),
        (st(r#"{"Effect":"Allow","Action":"*","Resource":"bucket/*"}"#),
         "Statement[1].Resource: \"bucket/*\" is not an S3 ARN (arn:aws:s3:::bucket or arn:aws:s3:::bucket/key)"),
        (st(r#"{"Effect":"Allow","Action":"*","NotResource":["*",3]}"#), "Statement[1].NotResource[1]: must be a string"),
        (st(r#"{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","300.0.0.0"]}}}"#),
         "Statement[1].Condition.IpAddress.aws:SourceIp: \"300.0.0.0\" is not an IP address or CIDR block"),
        (st(r#"{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"StringEquals":{"s3:prefx":"a"}}}"#),
         "Statement[1].Condition.StringEquals.s3:prefx: unknown condition key"),
        (st(r#"{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"StringEquals":{"s3:prefix":[{"a":1}]}}}"#),
         "Statement[1].Condition.StringEquals.s3:prefix[0]: must be a string, number or boolean"),
        (st(r#"{"Effect":"Allow","Action":"*","Resource":"*","Principal":"*"}"#),
         "Statement[1].Principal: identity policies name no principal"),
        (st(r#"{"Effect":"Allow","Action":"*","NotAction":"*","Resource":"*"}"#), "Statement[1]: has both Action and NotAction"),
        (st(r#"{"Effect":"Allow","Resource":"*"}"#), "Statement[1]: needs Action or NotAction"),
        (st(r#"{"Effect":"Allow","Action":"*"}"#), "Statement[1]: needs Resource or NotResource"),
        (st(r#"{"Effect":"Allow","Action":[],"Resource":"*"}"#), "Statement[1].Action: must not be empty"),
        (st(r#"{"Effect":"Allow","Action":"*","Resource":"*","Actions":"*"}"#), "Statement[1].Actions: unknown element"),
        (st(r#"{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::${aws:username"}"#),
         "Statement[1].Resource: unterminated policy variable in \"arn:aws:s3:::${aws:username\""),
        (st("7"), "Statement[1]: a statement is a JSON object"),
        (r#"{"Version":"2012-10-18","Statement":[]}"#.to_owned(), "Version: must be \"2012-10-17\" or \"2008-10-17\""),
        (r#"{"Version":"2012-10-17","Statement":[]}"#.to_owned(), "Statement: must hold at least one statement"),
        (r#"{"Version":"2012-10-17"}"#.to_owned(), "Statement: required"),
        (r#"{"Version":"2012-10-17","Statement":[],"Foo":1}"#.to_owned(), "Foo: unknown element"),
        (r#"[1]"#.to_owned(), "a policy is a JSON object"),
    ];
    for (doc, want) in cases {
        assert_eq!(error(&doc, PolicyKind::Identity), want, "{doc}");
    }
}

#[test]
fn json_syntax_errors_give_line_and_column() {
    let doc = "{\n  \"Version\": \"2012-10-17\",\n  \"Statement\": [\n    {\"Effect\": \"Allow\",}\n  ]\n}";
    let e = error(doc, PolicyKind::Identity);
    assert!(e.starts_with("JSON syntax error at line 4, column 24: "), "{e}");
    assert!(!e.contains(" at line 4 column"), "said once: {e}");
    assert!(error("", PolicyKind::Identity).starts_with("JSON syntax error at line 1, column 0"));
    let twice = "{\"Version\": \"2012-10-17\",\n \"Statement\": {\"Effect\": \"Deny\", \"Effect\": \"Allow\", \"Action\": \"*\", \"Resource\": \"*\"}}";
    let e = error(twice, PolicyKind::Identity);
    assert!(
        e.starts_with("JSON syntax error at line 2, column ") && e.ends_with(": duplicate key \"Effect\""),
        "{e}"
    );
}

#[test]
fn bucket_policy_rules() {
    let doc = |principal: &str, resource: &str| {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow",{principal}"Action":"s3:GetObject","Resource":"{resource}"}}]}}"#
        )
    };
    let b = PolicyKind::Bucket("photos");
    assert_eq!(
        error(&doc("", "arn:aws:s3:::photos/*"), b),
        "Statement[0]: a bucket policy statement needs Principal or NotPrincipal"
    );
    assert_eq!(
        error(&doc(r#""Principal":"*","#, "arn:aws:s3:::other/*"), b),
        "Statement[0].Resource: \"arn:aws:s3:::other/*\" is not in bucket \"photos\""
    );
    assert!(Policy::parse(doc(r#""Principal":"*","#, "arn:aws:s3:::pho*/x").as_bytes(), b).is_ok());
    assert_eq!(
        error(&doc(r#""Principal":{"Service":"s3.amazonaws.com"},"#, "arn:aws:s3:::photos/*"), b),
        "Statement[0].Principal.Service: only \"AWS\" principals are supported"
    );
    assert_eq!(
        error(&doc(r#""Principal":{"AWS":["*","alice"]},"#, "arn:aws:s3:::photos/*"), b),
        "Statement[0].Principal.AWS[1]: \"alice\" is not \"*\", an account id or a user, role or root ARN"
    );
    assert_eq!(
        error(&doc(r#""NotPrincipal":{"AWS":"arn:aws:iam:::user/alice"},"#, "arn:aws:s3:::photos/*"), b),
        "Statement[0].NotPrincipal: NotPrincipal is only allowed with \"Effect\": \"Deny\""
    );
}

#[test]
fn size_limits() {
    let statement =
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*","Principal":"*"}"#;
    let doc = |n: usize, pad: usize| {
        let list = vec![statement; n].join(",");
        format!(r#"{{"Version":"2012-10-17",{}"Statement":[{list}]}}"#, " ".repeat(pad))
    };
    let small = doc(200, 0);
    assert!(small.len() < BUCKET_POLICY_SIZE_MAX);
    assert!(Policy::parse(small.as_bytes(), PolicyKind::Bucket("photos")).is_ok());
    let padded = doc(200, BUCKET_POLICY_SIZE_MAX - small.len() + 1);
    assert_eq!(padded.len(), BUCKET_POLICY_SIZE_MAX + 1);
    let e = error(&padded, PolicyKind::Bucket("photos"));
    assert_eq!(e, format!("the policy is {} bytes; the limit is 20480", BUCKET_POLICY_SIZE_MAX + 1));
    // Identity policies: white space is not counted.
    let id_statement = r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}"#;
    let id_doc = |n: usize| {
        format!(r#"{{"Version":"2012-10-17", "Statement":[{}]}}"#, vec![id_statement; n].join(",      "))
    };
    let fits = (1..)
        .take_while(|n| {
            id_doc(*n).bytes().filter(|b| !b.is_ascii_whitespace()).count() <= IDENTITY_POLICY_SIZE_MAX
        })
        .last()
        .expect("n");
    assert!(id_doc(fits).len() > IDENTITY_POLICY_SIZE_MAX, "white space makes it longer than the limit");
    assert!(Policy::parse(id_doc(fits).as_bytes(), PolicyKind::Identity).is_ok());
    assert!(error(&id_doc(fits + 1), PolicyKind::Identity)
        .contains("bytes without white space; the limit is 6144"));
}

#[test]
fn home_folders_with_variables() {
    let p = identity(HOME);
    let get = |key: &str, who: Principal| Ask::new("s3:GetObject", key).by(who).against(&[&p], None);
    let alice = || Principal::user("alice", "AKIAALICE");
    assert_eq!(get("arn:aws:s3:::home/home/alice/notes.txt", alice()), Decision::Allow);
    assert_eq!(get("arn:aws:s3:::home/home/bob/notes.txt", alice()), Decision::ImplicitDeny);
    assert_eq!(
        get("arn:aws:s3:::home/home/bob/notes.txt", Principal::user("bob", "AKIABOB")),
        Decision::Allow
    );
    // A service account acts as its parent user.
    assert_eq!(
        get("arn:aws:s3:::home/home/alice/x", Principal::service_account("alice", "SVC1")),
        Decision::Allow
    );
    let list = |prefix: &str| {
        Ask::new("s3:ListBucket", "arn:aws:s3:::home").with("s3:prefix", prefix).against(&[&p], None)
    };
    assert_eq!(list("home/alice/"), Decision::Allow);
    assert_eq!(list(""), Decision::Allow);
    assert_eq!(list("home/bob/"), Decision::ImplicitDeny);
    let no_prefix = Ask::new("s3:ListBucket", "arn:aws:s3:::home");
    assert_eq!(no_prefix.against(&[&p], None), Decision::ImplicitDeny, "a missing s3:prefix matches nothing");
}

#[test]
fn explicit_deny_beats_allow_across_documents() {
    let allow_all = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#,
    );
    let deny_secret = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:*","Resource":"arn:aws:s3:::b/secret/*"}]}"#,
    );
    let secret = Ask::new("s3:GetObject", "arn:aws:s3:::b/secret/x");
    let public = Ask::new("s3:GetObject", "arn:aws:s3:::b/public/x");
    assert_eq!(secret.against(&[&allow_all, &deny_secret], None), Decision::ExplicitDeny);
    assert_eq!(
        secret.against(&[&deny_secret, &allow_all], None),
        Decision::ExplicitDeny,
        "order does not matter"
    );
    assert_eq!(public.against(&[&allow_all, &deny_secret], None), Decision::Allow);
    assert_eq!(public.against(&[&deny_secret], None), Decision::ImplicitDeny);
    assert_eq!(public.against(&[], None), Decision::ImplicitDeny);
    // A bucket policy's deny beats the identity's allow, and its allow grants on its own.
    let b = bucket(
        r#"{"Version":"2012-10-17","Statement":[
          {"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::photos/*"},
          {"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/alice"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}"#,
    );
    let delete = Ask::new("s3:DeleteObject", "arn:aws:s3:::photos/a");
    assert_eq!(delete.against(&[&allow_all], Some(&b)), Decision::ExplicitDeny);
    let read = Ask::new("s3:GetObject", "arn:aws:s3:::photos/a");
    assert_eq!(read.against(&[], Some(&b)), Decision::Allow);
    assert_eq!(read.by(Principal::user("bob", "AKIABOB")).against(&[], Some(&b)), Decision::ImplicitDeny);
}

#[test]
fn not_action_and_not_resource() {
    // AWS's example: everything but IAM-like administration, here everything but admin:.
    let p = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","NotAction":"admin:*","NotResource":"arn:aws:s3:::vault*"}]}"#,
    );
    assert_eq!(Ask::new("s3:PutObject", "arn:aws:s3:::b/k").against(&[&p], None), Decision::Allow);
    assert_eq!(Ask::new("admin:CreateUser", "arn:aws:s3:::b").against(&[&p], None), Decision::ImplicitDeny);
    assert_eq!(Ask::new("s3:PutObject", "arn:aws:s3:::vault/k").against(&[&p], None), Decision::ImplicitDeny);
    // Deny + NotAction: deny everything except reads.
    let d = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","NotAction":["s3:Get*","s3:List*"],"Resource":"*"}]}"#,
    );
    assert_eq!(Ask::new("s3:PutObject", "arn:aws:s3:::b/k").against(&[&p, &d], None), Decision::ExplicitDeny);
    assert_eq!(Ask::new("s3:GetObject", "arn:aws:s3:::b/k").against(&[&p, &d], None), Decision::Allow);
    // Actions match ignoring case; resources do not.
    let c = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"S3:getobject","Resource":"arn:aws:s3:::B/*"}]}"#,
    );
    assert_eq!(Ask::new("s3:GetObject", "arn:aws:s3:::B/k").against(&[&c], None), Decision::Allow);
    assert_eq!(Ask::new("s3:GetObject", "arn:aws:s3:::b/k").against(&[&c], None), Decision::ImplicitDeny);
}

#[test]
fn conditions_in_statements() {
    // AWS's examples: deny plain HTTP; allow only from a network.
    let p = identity(
        r#"{"Version":"2012-10-17","Statement":[
          {"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}},
          {"Effect":"Deny","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":false}}}]}"#,
    );
    let ask = |ip: &str, tls: &str| {
        Ask::new("s3:GetObject", "arn:aws:s3:::b/k")
            .with("aws:SourceIp", ip)
            .with("aws:SecureTransport", tls)
            .against(&[&p], None)
    };
    assert_eq!(ask("192.0.2.7", "true"), Decision::Allow);
    assert_eq!(ask("192.0.2.7", "false"), Decision::ExplicitDeny);
    assert_eq!(ask("198.51.100.1", "true"), Decision::ImplicitDeny);
    // Every operator and key of a statement must hold.
    let both = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"*",
          "Condition":{"StringEquals":{"s3:prefix":"a/","s3:delimiter":"/"},"NumericLessThanEquals":{"s3:max-keys":"100"}}}]}"#,
    );
    let list = |prefix: &str, max: &str| {
        Ask::new("s3:ListBucket", "arn:aws:s3:::b")
            .with("s3:prefix", prefix)
            .with("s3:delimiter", "/")
            .with("s3:max-keys", max)
            .against(&[&both], None)
    };
    assert_eq!(list("a/", "100"), Decision::Allow);
    assert_eq!(list("a/", "1000"), Decision::ImplicitDeny);
    assert_eq!(list("b/", "10"), Decision::ImplicitDeny);
}

#[test]
fn principals_in_bucket_policies() {
    let public = bucket(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/public/*"}]}"#,
    );
    assert!(public.is_public());
    let anon = Ask::new("s3:GetObject", "arn:aws:s3:::photos/public/cat.jpg").by(Principal::anonymous());
    assert_eq!(anon.against(&[], Some(&public)), Decision::Allow);
    let anon_private = Ask::new("s3:GetObject", "arn:aws:s3:::photos/private/x").by(Principal::anonymous());
    assert_eq!(anon_private.against(&[], Some(&public)), Decision::ImplicitDeny);
    let aws_star = bucket(
        r#"{"Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}"#,
    );
    assert_eq!(anon.against(&[], Some(&aws_star)), Decision::Allow, "{{\"AWS\": \"*\"}} includes anonymous");
    let named = bucket(
        r#"{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/alice"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}"#,
    );
    assert!(!named.is_public());
    assert_eq!(anon.against(&[], Some(&named)), Decision::ImplicitDeny);
    let with = |condition: &str| {
        bucket(&format!(
            r#"{{"Statement":[{{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*","Condition":{condition}}}]}}"#
        ))
        .is_public()
    };
    // Fixed values of the keys S3 names make a policy non-public; anything else does not.
    assert!(!with(r#"{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}"#));
    assert!(!with(r#"{"StringEquals":{"aws:SourceVpce":"vpce-1a2b"}}"#));
    assert!(!with(r#"{"ArnEquals":{"aws:SourceArn":"arn:aws:s3:::logs"}}"#));
    assert!(!with(r#"{"StringEquals":{"aws:SourceAccount":"111122223333"},"StringLike":{"s3:prefix":"*"}}"#));
    assert!(with(r#"{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}"#), "/0 limits nothing");
    assert!(with(r#"{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}"#), "negated");
    assert!(with(r#"{"IpAddressIfExists":{"aws:SourceIp":"10.0.0.0/8"}}"#), "IfExists");
    assert!(with(r#"{"StringLike":{"aws:SourceVpce":"vpce-*"}}"#), "a wildcard is no fixed value");
    assert!(with(r#"{"ForAllValues:StringEquals":{"aws:SourceVpce":"vpce-1"}}"#), "vacuous for no value");
    assert!(with(r#"{"StringLike":{"s3:prefix":"public/*"}}"#), "not a key S3 counts");
    assert!(with(r#"{"Bool":{"aws:SecureTransport":"true"}}"#));
    // ARNs written for AWS name the user whatever their account; an account id means its root.
    let aws_style = bucket(
        r#"{"Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111122223333:user/alice","111122223333"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}"#,
    );
    let read_by =
        |p: Principal| Ask::new("s3:GetObject", "arn:aws:s3:::photos/x").by(p).against(&[], Some(&aws_style));
    assert_eq!(read_by(Principal::user("alice", "AKIAALICE")), Decision::Allow);
    assert_eq!(read_by(Principal::user("bob", "AKIABOB")), Decision::ImplicitDeny);
    assert_eq!(read_by(Principal::root("admin")), Decision::Allow);
    for bad in [r#""arn:aws:s3:::photos""#, r#""arn:aws:iam::1:user/*""#, r#""12345""#] {
        let doc = format!(
            r#"{{"Statement":[{{"Effect":"Allow","Principal":{{"AWS":{bad}}},"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}}]}}"#
        );
        assert!(Policy::parse(doc.as_bytes(), PolicyKind::Bucket("photos")).is_err(), "{bad}");
    }
    // NotPrincipal with Deny: everyone but alice is refused.
    let only_alice = bucket(
        r#"{"Statement":[{"Effect":"Deny","NotPrincipal":{"AWS":"arn:aws:iam:::user/alice"},"Action":"s3:*","Resource":["arn:aws:s3:::photos","arn:aws:s3:::photos/*"]},
          {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}"#,
    );
    let read = Ask::new("s3:GetObject", "arn:aws:s3:::photos/x");
    assert_eq!(read.against(&[], Some(&only_alice)), Decision::Allow);
    assert_eq!(
        read.by(Principal::user("bob", "AKIABOB")).against(&[], Some(&only_alice)),
        Decision::ExplicitDeny
    );
    assert_eq!(anon.against(&[], Some(&only_alice)), Decision::ExplicitDeny, "anonymous is not alice");
}

#[test]
fn actions_without_a_resource() {
    let p = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"arn:aws:s3:::*"}]}"#,
    );
    let q = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"arn:aws:s3:::photos"}]}"#,
    );
    let mut ask = Ask::new("s3:ListAllMyBuckets", "");
    ask.resource = None;
    assert_eq!(ask.against(&[&p], None), Decision::Allow);
    assert_eq!(ask.against(&[&q], None), Decision::ImplicitDeny);
}

#[test]
fn narrowing_is_an_intersection() {
    let parent = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::b/*"}]}"#,
    );
    let session = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:DeleteObject"],"Resource":"*"}]}"#,
    );
    let who = Principal::assumed_role("alice", "ASIA1", "s1");
    let decide = |action: &str, narrowing: Option<&Policy>| {
        let ask = Ask::new(action, "arn:aws:s3:::b/k").by(who.clone());
        evaluate_narrowed(&ask.request(), [&parent], None, narrowing)
    };
    assert_eq!(decide("s3:GetObject", Some(&session)), Decision::Allow, "both allow");
    assert_eq!(decide("s3:PutObject", Some(&session)), Decision::ImplicitDeny, "only the parent allows");
    assert_eq!(decide("s3:DeleteObject", Some(&session)), Decision::ImplicitDeny, "only the session allows");
    assert_eq!(decide("s3:PutObject", None), Decision::Allow, "no session policy: the parent's rights");
    let deny =
        identity(r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"*","Resource":"*"}]}"#);
    assert_eq!(decide("s3:GetObject", Some(&deny)), Decision::ExplicitDeny);
}

#[test]
fn builtin_policies() {
    use crate::builtin;
    for (name, doc) in builtin::BUILTIN {
        assert!(Policy::parse(doc.as_bytes(), PolicyKind::Identity).is_ok(), "{name}");
        assert!(builtin::policy(name).is_some(), "{name}");
    }
    assert!(builtin::policy("superuser").is_none());
    let can = |name: &str, action: &str, resource: Option<&str>| {
        let p = builtin::policy(name).expect("built in");
        let mut ask = Ask::new(action, "");
        ask.resource = resource;
        ask.against(&[&p], None).is_allowed()
    };
    let obj = Some("arn:aws:s3:::b/k");
    let bkt = Some("arn:aws:s3:::b");
    assert!(can("readonly", "s3:GetObject", obj) && can("readonly", "s3:GetBucketLocation", bkt));
    assert!(!can("readonly", "s3:PutObject", obj) && !can("readonly", "s3:ListBucket", bkt));
    assert!(can("writeonly", "s3:PutObject", obj) && !can("writeonly", "s3:GetObject", obj));
    assert!(can("readwrite", "s3:DeleteObject", obj) && can("readwrite", "s3:ListAllMyBuckets", None));
    assert!(!can("readwrite", "admin:CreateUser", None));
    assert!(can("diagnostics", "admin:ServerInfo", None) && !can("diagnostics", "admin:CreateUser", None));
    assert!(!can("diagnostics", "s3:GetObject", obj));
    assert!(can("consoleAdmin", "admin:CreateUser", None) && can("consoleAdmin", "sts:AssumeRole", None));
    assert!(can("consoleAdmin", "s3:PutObject", obj));
}

#[test]
fn a_policy_tells_which_condition_keys_it_uses() {
    let tagged = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*",
            "Condition":{"StringEquals":{"S3:ExistingObjectTag/Class":"public"}}}]}"#,
    );
    assert!(tagged.conditions_on("s3:ExistingObjectTag/"));
    assert!(tagged.conditions_on("s3:existingobjecttag/Class"));
    assert!(!tagged.conditions_on("s3:existingobjecttag/class"), "a tag's name keeps its case");
    assert!(!tagged.conditions_on("s3:RequestObjectTag/"));
    let plain =
        identity(r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#);
    assert!(!plain.conditions_on("s3:ExistingObjectTag/"));
}
