//! The name ranges of each scan.

use super::*;

#[test]
fn a_subtree_is_bounded_by_its_collection_and_cut_at_hash_prefixes() {
    let whole = Bounds {
        start: None,
        end: None,
    };
    assert_eq!(
        ranges(Some(&COMMANDS), &whole),
        vec![(
            Some(format!("checkoutRequests/{MIN_ID}")),
            Some(format!("checkoutRequests\0/{MIN_ID}"))
        )]
    );
    let cut = Bounds {
        start: Some("0a00".into()),
        end: None,
    };
    // The commerce events end where the send events begin; those run to the end.
    assert_eq!(
        ranges(Some(&AUDITS), &cut),
        vec![(
            Some("auditEvents/commerce_command_0a00".into()),
            Some("auditEvents/provider_send_".into())
        )]
    );
    assert_eq!(
        ranges(Some(&SEND_AUDITS), &whole),
        vec![(
            Some("auditEvents/provider_send_".into()),
            Some(format!("auditEvents\0/{MIN_ID}"))
        )]
    );
    let cut_both = Bounds {
        start: Some("0a00".into()),
        end: Some("8000".into()),
    };
    assert_eq!(
        ranges(Some(&SEND_AUDITS), &cut_both),
        vec![(
            Some("auditEvents/provider_send_0a00".into()),
            Some("auditEvents/provider_send_8000".into())
        )]
    );
    assert_eq!(
        ranges(None, &whole),
        vec![
            (None, Some(format!("checkoutRequests/{MIN_ID}"))),
            (Some(format!("checkoutRequests\0/{MIN_ID}")), None)
        ]
    );
}
