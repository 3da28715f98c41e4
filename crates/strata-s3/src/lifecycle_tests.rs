//! Unit tests of `lifecycle.rs`: the lifecycle configuration documents, their AWS errors and the
//! print-back round trip.

use super::*;

fn doc(rules: &str) -> String {
    format!(
        r#"<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{rules}</LifecycleConfiguration>"#
    )
}

fn rule(inner: &str) -> String {
    format!("<Rule><ID>r</ID><Status>Enabled</Status>{inner}</Rule>")
}

fn code(d: &str) -> Option<S3ErrorCode> {
    parse(d.as_bytes()).err().map(|e| e.code)
}

const ALL: &str = "<Filter><Prefix></Prefix></Filter>";

#[test]
fn configurations_parse_and_print_back() {
    let d = doc(&format!(
        "{}{}{}{}",
        rule("<Filter><And><Prefix>logs/</Prefix><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>b</Key><Value></Value></Tag><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>99</ObjectSizeLessThan></And></Filter><Expiration><Days>3</Days></Expiration>")
            .replace("<ID>r</ID>", "<ID>one</ID>"),
        "<Rule><ID>two</ID><Prefix>old/</Prefix><Status>Disabled</Status><Expiration><Date>2030-01-01T00:00:00.000Z</Date></Expiration></Rule>",
        "<Rule><ID>three</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>5</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>",
        "<Rule><Filter/><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>",
    ));
    let c = parse(d.as_bytes()).expect("parses");
    assert_eq!(c.rules.len(), 4);
    let one = &c.rules[0];
    assert_eq!((one.id.as_str(), one.enabled, one.legacy_prefix), ("one", true, false));
    assert_eq!(one.filter.prefix, "logs/");
    assert_eq!(one.filter.tags, vec![("a".to_owned(), "1".to_owned()), ("b".to_owned(), String::new())]);
    assert_eq!((one.filter.size_greater_than, one.filter.size_less_than), (Some(10), Some(99)));
    assert_eq!(one.expiration, Some(LifecycleExpiration::Days(3)));
    let two = &c.rules[1];
    assert!(two.legacy_prefix && !two.enabled);
    assert_eq!(two.filter.prefix, "old/");
    assert_eq!(two.expiration, Some(LifecycleExpiration::Date(1_893_456_000)));
    let three = &c.rules[2];
    assert_eq!(three.noncurrent_expiration, Some(NoncurrentExpiration { days: 2, newer_versions: Some(5) }));
    let four = &c.rules[3];
    assert!(!four.id.is_empty(), "an id is made when none is given");
    assert_eq!(four.expiration, Some(LifecycleExpiration::ExpiredObjectDeleteMarker));
    assert_eq!(four.abort_upload_days, Some(7));
    assert_eq!(four.filter, LifecycleFilter::default());
    // What GET prints parses to the same configuration.
    assert_eq!(parse(write(&c).as_bytes()).expect("round trip"), c);
    // The legacy form with an empty prefix applies to everything.
    let legacy = parse(doc(&rule("<Prefix></Prefix><Expiration><Days>1</Days></Expiration>")).as_bytes());
    assert_eq!(legacy.expect("parses").rules[0].filter.prefix, "");
}

#[test]
fn bad_configurations_get_aws_codes() {
    use S3ErrorCode::{InvalidArgument as Inv, InvalidStorageClass, MalformedXML as Mal, NotImplemented};
    let days = |d: &str| doc(&rule(&format!("{ALL}<Expiration><Days>{d}</Days></Expiration>")));
    let cases: Vec<(String, S3ErrorCode)> = vec![
        // Not XML, another document, no rules, an unknown element, no status or a bad one.
        ("<Lifecycle".into(), Mal),
        ("<Other><Rule/></Other>".into(), Mal),
        (doc(""), Mal),
        (doc(&rule(&format!("{ALL}<Expiration><Days>1</Days></Expiration><Colour>red</Colour>"))), Mal),
        (doc(&format!("<Rule>{ALL}<Expiration><Days>1</Days></Expiration></Rule>")), Mal),
        (doc(&format!("<Rule><Status>On</Status>{ALL}<Expiration><Days>1</Days></Expiration></Rule>")), Mal),
        // Neither Filter nor Prefix; both.
        (doc(&rule("<Expiration><Days>1</Days></Expiration>")), Mal),
        (doc(&rule(&format!("<Prefix>a</Prefix>{ALL}<Expiration><Days>1</Days></Expiration>"))), Inv),
        // A filter with two conditions outside And.
        (doc(&rule("<Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Expiration><Days>1</Days></Expiration>")), Mal),
        // Days: not a number, zero, negative; both Days and Date; a Date not at midnight.
        (days("one"), Mal),
        (days("0"), Inv),
        (days("-3"), Inv),
        (doc(&rule(&format!("{ALL}<Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration>"))), Inv),
        (doc(&rule(&format!("{ALL}<Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration>"))), Inv),
        (doc(&rule(&format!("{ALL}<Expiration><Date>2030-01-01T00:00:00.5Z</Date></Expiration>"))), Inv),
        (doc(&rule(&format!("{ALL}<Expiration><Date>tomorrow</Date></Expiration>"))), Mal),
        (doc(&rule(&format!("{ALL}<Expiration><Date>2600-01-01T00:00:00Z</Date></Expiration>"))), Inv),
        // XML cannot carry NUL.
        (doc(&rule(&format!("{ALL}<Expiration><Days>1</Days></Expiration>")).replace("<ID>r</ID>", "<ID>r\0</ID>")), Mal),
        // ExpiredObjectDeleteMarker with Days; with a tag filter.
        (doc(&rule(&format!("{ALL}<Expiration><Days>1</Days><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>"))), Inv),
        (doc(&rule("<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>")), Inv),
        // No action at all (an ExpiredObjectDeleteMarker of false is none).
        (doc(&rule(ALL)), Inv),
        (doc(&rule(&format!("{ALL}<Expiration><ExpiredObjectDeleteMarker>false</ExpiredObjectDeleteMarker></Expiration>"))), Inv),
        // A tag filter with AbortIncompleteMultipartUpload; bad day counts of the other actions.
        (doc(&rule("<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>")), Inv),
        (doc(&rule(&format!("{ALL}<AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation></AbortIncompleteMultipartUpload>"))), Inv),
        (doc(&rule(&format!("{ALL}<NoncurrentVersionExpiration><NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration>"))), Inv),
        (doc(&rule(&format!("{ALL}<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions></NoncurrentVersionExpiration>"))), Inv),
        // Sizes: negative, or an empty range.
        (doc(&rule("<Filter><ObjectSizeGreaterThan>-1</ObjectSizeGreaterThan></Filter><Expiration><Days>1</Days></Expiration>")), Inv),
        (doc(&rule("<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>10</ObjectSizeLessThan></And></Filter><Expiration><Days>1</Days></Expiration>")), Inv),
        // Tags repeated in And.
        (doc(&rule("<Filter><And><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></And></Filter><Expiration><Days>1</Days></Expiration>")), Inv),
        // Ids: repeated, too long.
        (doc(&format!("{0}{0}", rule(&format!("{ALL}<Expiration><Days>1</Days></Expiration>")))), Inv),
        (doc(&rule(&format!("{ALL}<Expiration><Days>1</Days></Expiration>")).replace("<ID>r</ID>", &format!("<ID>{}</ID>", "x".repeat(256)))), Inv),
        // Transitions: no storage tiers here.
        (doc(&rule(&format!("{ALL}<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>"))), NotImplemented),
        (doc(&rule(&format!("{ALL}<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>"))), NotImplemented),
        (doc(&rule("<Filter/><Transition><Date>2030-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition>")), NotImplemented),
        // ... but a transition S3 would refuse is refused as S3 refuses it, first.
        (doc(&rule(&format!("{ALL}<Transition><Date>not-a-date</Date><StorageClass>GLACIER</StorageClass></Transition>"))), Inv),
        (doc(&rule(&format!("{ALL}<Transition><Date>2030-01-01T12:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition>"))), Inv),
        (doc(&rule(&format!("{ALL}<Transition><Days>1</Days><Date>2030-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition>"))), Inv),
        (doc(&rule(&format!("{ALL}<Transition><Days>-1</Days><StorageClass>GLACIER</StorageClass></Transition>"))), Inv),
        (doc(&rule(&format!("{ALL}<Transition><Days>10</Days><StorageClass>STANDARD_IA</StorageClass></Transition>"))), Inv),
        (doc(&rule(&format!("{ALL}<Transition><Days>10</Days><StorageClass>PAPER</StorageClass></Transition>"))), InvalidStorageClass),
        (doc(&rule(&format!("{ALL}<Transition><Days>soon</Days><StorageClass>GLACIER</StorageClass></Transition>"))), Mal),
        (doc(&rule(&format!("{ALL}<Transition><StorageClass>GLACIER</StorageClass></Transition>"))), Mal),
        (doc(&rule(&format!("{ALL}<NoncurrentVersionTransition><NoncurrentDays>0</NoncurrentDays><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>"))), Inv),
        // Repeated ids in a document with transitions: the repetition is told, not 501.
        (doc(&format!("{0}{0}", rule(&format!("{ALL}<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>")))), Inv),
        // A transition beside another rule's mistake: the mistake is told.
        (doc(&format!("{}{}", rule(&format!("{ALL}<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>")), rule(ALL).replace("<ID>r</ID>", "<ID>s</ID>"))), Inv),
    ];
    for (d, want) in cases {
        assert_eq!(code(&d), Some(want), "{d}");
    }
    // The limits themselves are fine.
    let id = rule(&format!("{ALL}<Expiration><Days>1</Days></Expiration>"))
        .replace("<ID>r</ID>", &format!("<ID>{}</ID>", "x".repeat(255)));
    assert_eq!(code(&doc(&id)), None);
    let many: String = (0..LIFECYCLE_RULES_MAX)
        .map(|i| {
            rule(&format!("{ALL}<Expiration><Days>1</Days></Expiration>"))
                .replace("<ID>r</ID>", &format!("<ID>r{i}</ID>"))
        })
        .collect();
    assert_eq!(code(&doc(&many)), None);
    let too_many = many + &rule(&format!("{ALL}<Expiration><Days>1</Days></Expiration>"));
    assert_eq!(code(&doc(&too_many)), Some(Inv));
}

#[test]
fn content_md5_is_checked_when_sent() {
    use base64::Engine;
    use md5::Digest;
    let body = b"<LifecycleConfiguration/>";
    let mut h = http::HeaderMap::new();
    assert!(crate::body::check_content_md5(&h, body).is_ok());
    let good = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body));
    h.insert("content-md5", good.parse().expect("value"));
    assert!(crate::body::check_content_md5(&h, body).is_ok());
    let code = |h: &http::HeaderMap| crate::body::check_content_md5(h, b"other").err().map(|e| e.code);
    assert_eq!(code(&h), Some(S3ErrorCode::BadDigest));
    h.insert("content-md5", "not base64!".parse().expect("value"));
    assert_eq!(code(&h), Some(S3ErrorCode::InvalidDigest));
}

#[test]
fn indented_documents_parse_like_compact_ones() {
    let d = r#"<?xml version="1.0" encoding="UTF-8"?>
<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Rule>
    <ID>pretty</ID>
    <Filter>
      <And>
        <Prefix>logs/</Prefix>
        <Tag>
          <Key>a</Key>
          <Value>1</Value>
        </Tag>
      </And>
    </Filter>
    <Status>Enabled</Status>
    <Expiration>
      <Days> 4 </Days>
    </Expiration>
  </Rule>
</LifecycleConfiguration>
"#;
    let c = parse(d.as_bytes()).expect("parses");
    assert_eq!(c.rules[0].id, "pretty");
    assert_eq!(c.rules[0].filter.tags, vec![("a".to_owned(), "1".to_owned())]);
    assert_eq!(c.rules[0].expiration, Some(LifecycleExpiration::Days(4)));
}
