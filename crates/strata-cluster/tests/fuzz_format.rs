//! Never-panic fuzzing of format records (read from every drive at start-up): any bytes on one
//! drive, beside good records on the others, resolve to a plan or a refusal, never a panic.

use strata_cluster::format::{resolve, DriveState, Format, FORMAT_VERSION};
use strata_cluster::layout::plan;
use uuid::Uuid;

#[test]
fn fuzz_format_records() {
    let layouts = vec![plan(4, None).expect("layout")];
    let deployment = Uuid::from_u128(1);
    let drives: Vec<Uuid> = (10..14).map(Uuid::from_u128).collect();
    let format = |i: usize| Format {
        version: FORMAT_VERSION,
        deployment_id: deployment,
        drive_id: drives[i],
        pools: vec![vec![drives.clone()]],
        placement: Default::default(),
        retired: Vec::new(),
    };
    let good: Vec<Vec<u8>> = (0..4).map(|i| format(i).to_json()).collect();
    strata_types::fuzz::run("format record", &[&good[0], &good[1]], |bytes| {
        let _ = Format::from_json(bytes);
        for slot in 0..4 {
            let states: Vec<DriveState> = (0..4)
                .map(|i| {
                    if i == slot {
                        DriveState::Formatted(bytes.to_vec())
                    } else {
                        DriveState::Formatted(good[i].clone())
                    }
                })
                .collect();
            let _ = resolve(&layouts, &states, Uuid::new_v4);
        }
    });
}
