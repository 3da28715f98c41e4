//! Unit tests of `replication.rs`: the replication configuration documents (both schemas), their
//! AWS errors and the print-back round trip.

use super::*;

fn doc(rules: &str) -> String {
    format!(
        r#"<ReplicationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Role>arn:aws:iam::1:role/r</Role>{rules}</ReplicationConfiguration>"#
    )
}

const DEST: &str = "<Destination><Bucket>arn:aws:s3:::copy</Bucket></Destination>";
const NO_MARKERS: &str = "<DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication>";

/// A V2 rule with `inner` (its filter and anything else) and the default destination.
fn rule(inner: &str) -> String {
    format!("<Rule><ID>r</ID><Status>Enabled</Status>{inner}{DEST}{NO_MARKERS}</Rule>")
}

fn code(d: &str) -> Option<S3ErrorCode> {
    parse(d.as_bytes()).err().map(|e| e.code)
}

#[test]
fn configurations_of_both_schemas_parse_and_print_back() {
    let v2 = doc(&format!(
        "{}{}{}",
        "<Rule><ID>one</ID><Priority>2</Priority><Status>Enabled</Status><Filter><And><Prefix>logs/</Prefix><Tag><Key>a</Key><Value>1</Value></Tag></And></Filter>\
         <SourceSelectionCriteria><ReplicaModifications><Status>Enabled</Status></ReplicaModifications></SourceSelectionCriteria>\
         <ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication>\
         <Destination><Bucket>arn:aws:s3:::copy</Bucket><Account>123</Account><StorageClass>REDUCED_REDUNDANCY</StorageClass>\
         <AccessControlTranslation><Owner>Destination</Owner></AccessControlTranslation>\
         <ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
         <Metrics><Status>Enabled</Status><EventThreshold><Minutes>15</Minutes></EventThreshold></Metrics></Destination>\
         <DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication></Rule>",
        "<Rule><ID>two</ID><Priority>1</Priority><Status>Disabled</Status><Filter><Prefix>img/</Prefix></Filter><Destination><Bucket>arn:aws:s3:::other</Bucket></Destination><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication></Rule>",
        "<Rule><Status>Enabled</Status><Filter/><Destination><Bucket>arn:aws:s3:::copy</Bucket></Destination><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication></Rule>",
    ));
    let config = parse(v2.as_bytes()).expect("parses");
    assert_eq!(config.role, "arn:aws:iam::1:role/r");
    let [one, two, three] = &config.rules[..] else { panic!("three rules: {config:?}") };
    assert_eq!(one.priority, Some(2));
    assert_eq!(
        one.filter,
        ReplicationFilter { prefix: "logs/".into(), tags: vec![("a".into(), "1".into())] }
    );
    assert!(one.replica_modifications && one.existing_objects && !one.delete_markers);
    assert_eq!(one.destination.storage_class.as_deref(), Some("REDUCED_REDUNDANCY"));
    assert!(
        one.destination.owner_is_destination && one.destination.replication_time && one.destination.metrics
    );
    assert!(!two.enabled && two.delete_markers && two.filter.prefix == "img/");
    // No ID: one is made; no Priority in a V2 rule: 0.
    assert_eq!(three.id.len(), 32);
    assert_eq!(three.priority, Some(0));
    assert_eq!(parse(write(&config).as_bytes()).expect("its print parses"), config);

    let v1 = doc(&format!(
        "<Rule><ID>a</ID><Prefix>x/</Prefix><Status>Enabled</Status>{DEST}</Rule><Rule><ID>b</ID><Prefix>y/</Prefix><Status>Enabled</Status>{DEST}</Rule>"
    ));
    let config = parse(v1.as_bytes()).expect("parses");
    // The first schema has no priorities and replicates delete markers.
    assert!(config.rules.iter().all(|r| r.legacy_prefix && r.priority.is_none() && r.delete_markers));
    let printed = write(&config);
    assert!(!printed.contains("<Filter>") && !printed.contains("DeleteMarkerReplication"), "{printed}");
    assert_eq!(parse(printed.as_bytes()).expect("its print parses"), config);
}

#[test]
fn documents_aws_refuses_are_refused_with_its_codes() {
    use S3ErrorCode::*;
    let malformed = [
        "<ReplicationConfiguration/>".to_owned(),
        "<Other/>".to_owned(),
        doc(""),
        // No Status, a bad one, no Destination, no Bucket in it.
        doc(&format!("<Rule><Filter/>{DEST}{NO_MARKERS}</Rule>")),
        doc(&format!("<Rule><Status>On</Status><Filter/>{DEST}{NO_MARKERS}</Rule>")),
        doc(&format!("<Rule><Status>Enabled</Status><Filter/>{NO_MARKERS}</Rule>")),
        doc(&format!("<Rule><Status>Enabled</Status><Filter/><Destination/>{NO_MARKERS}</Rule>")),
        // Neither Prefix nor Filter; a Filter with two conditions outside And; an unknown element.
        doc(&format!("<Rule><Status>Enabled</Status>{DEST}{NO_MARKERS}</Rule>")),
        doc(&rule("<Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>")),
        doc(&rule("<Filter/><Colour>red</Colour>")),
        doc(&rule("<Priority>one</Priority><Filter/>")),
        doc(&rule("<Filter/><ExistingObjectReplication/>")),
    ];
    for d in &malformed {
        assert_eq!(code(d), Some(MalformedXML), "{d}");
    }
    let cases = [
        // Both schemas in one rule, or across rules.
        (doc(&rule("<Prefix>a</Prefix><Filter/>")), InvalidArgument),
        (
            doc(&format!("{}<Rule><ID>b</ID><Prefix>z</Prefix><Status>Enabled</Status>{DEST}</Rule>", rule("<Filter/>"))),
            InvalidRequest,
        ),
        // V2 without DeleteMarkerReplication; V1 with it, or with a Priority.
        (doc(&format!("<Rule><Status>Enabled</Status><Filter/>{DEST}</Rule>")), InvalidRequest),
        (doc(&format!("<Rule><Prefix>a</Prefix><Status>Enabled</Status>{DEST}{NO_MARKERS}</Rule>")), InvalidRequest),
        (doc(&format!("<Rule><Priority>1</Priority><Prefix>a</Prefix><Status>Enabled</Status>{DEST}</Rule>")), InvalidRequest),
        // Delete markers with a tag filter.
        (
            doc(&format!(
                "<Rule><Status>Enabled</Status><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>{DEST}<DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication></Rule>"
            )),
            InvalidRequest,
        ),
        // Two rules with one priority, one ID, overlapping V1 prefixes.
        (doc(&format!("{}{}", rule("<Priority>1</Priority><Filter/>").replace("<ID>r", "<ID>a"), rule("<Priority>1</Priority><Filter/>"))), InvalidRequest),
        (doc(&format!("{}{}", rule("<Priority>1</Priority><Filter/>"), rule("<Priority>2</Priority><Filter/>"))), InvalidArgument),
        (
            doc(&format!(
                "<Rule><ID>a</ID><Prefix>logs</Prefix><Status>Enabled</Status>{DEST}</Rule><Rule><ID>b</ID><Prefix>logs/old</Prefix><Status>Enabled</Status>{DEST}</Rule>"
            )),
            InvalidRequest,
        ),
        (doc(&rule("<Priority>-1</Priority><Filter/>")), InvalidArgument),
        (doc(&rule("<Filter/>").replace("<ID>r</ID>", &format!("<ID>{}</ID>", "i".repeat(256)))), InvalidArgument),
        // Duplicate or empty tag keys.
        (doc(&rule("<Filter><And><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></And></Filter>")), InvalidArgument),
        (doc(&rule("<Filter><Tag><Key></Key><Value>1</Value></Tag></Filter>")), InvalidTag),
        // Destinations: not an S3 ARN, not a bucket name, a class with no tier here, an unknown one.
        (doc(&rule("<Filter/>").replace("arn:aws:s3:::copy", "copy")), InvalidArgument),
        (doc(&rule("<Filter/>").replace("arn:aws:s3:::copy", "arn:aws:s3:::Not_A_Bucket")), InvalidArgument),
        (doc(&rule("<Filter/>").replace("</Bucket>", "</Bucket><StorageClass>GLACIER</StorageClass>")), InvalidStorageClass),
        (doc(&rule("<Filter/>").replace("</Bucket>", "</Bucket><StorageClass>GOLD</StorageClass>")), InvalidStorageClass),
        // Owner translation without an account; RTC without metrics, or not 15 minutes.
        (
            doc(&rule("<Filter/>").replace("</Bucket>", "</Bucket><AccessControlTranslation><Owner>Destination</Owner></AccessControlTranslation>")),
            InvalidRequest,
        ),
        (
            doc(&rule("<Filter/>").replace("</Bucket>", "</Bucket><ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>")),
            InvalidRequest,
        ),
        (
            doc(&rule("<Filter/>").replace("</Bucket>", "</Bucket><Metrics><Status>Enabled</Status><EventThreshold><Minutes>5</Minutes></EventThreshold></Metrics>")),
            InvalidArgument,
        ),
        // SSE-KMS objects selected without a key for their replicas.
        (
            doc(&rule("<Filter/><SourceSelectionCriteria><SseKmsEncryptedObjects><Status>Enabled</Status></SseKmsEncryptedObjects></SourceSelectionCriteria>")),
            InvalidRequest,
        ),
    ];
    for (d, want) in &cases {
        assert_eq!(code(d), Some(*want), "{d}");
    }
    let too_many: String = (0..=REPLICATION_RULES_MAX)
        .map(|i| {
            rule(&format!("<Priority>{i}</Priority><Filter/>"))
                .replace("<ID>r</ID>", &format!("<ID>r{i}</ID>"))
        })
        .collect();
    assert_eq!(code(&doc(&too_many)), Some(InvalidArgument));
}
