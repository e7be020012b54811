use super::*;

#[test]
fn a_plain_history_reaches_every_state() {
    // register, acquire, takeover after expiry, complete: the decoder builds a
    // valid history from bytes without corruption.
    let fixture = Fixture::new().expect("fixture");
    let mut store = Store::new();
    let run = |store: &mut Store, bytes: &[u8]| operation(&fixture, &mut Bytes::new(bytes), store);
    // time mode, offset index, holder, operation kind (u16 each), then arguments
    run(&mut store, &[0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(store.len(), 2, "root and registration event");
    run(&mut store, &[0, 0, 0, 0, 0, 0, 1, 0]);
    assert_eq!(store.len(), 4, "lifecycle and acquisition event");
    run(&mut store, &[0, 0, 6, 0, 1, 0, 1, 0]);
    assert_eq!(store.len(), 5, "takeover event");
    // fence: mode 1 then byte 2; request: success with commitment 0
    run(&mut store, &[0, 0, 7, 0, 1, 0, 2, 0, 1, 0, 2, 1, 0, 0, 0]);
    assert_eq!(store.len(), 6, "terminal event");
    let lifecycle = store
        .get(&lifecycle::path(fixture.hash()))
        .map(|f| Lifecycle::parse(fixture.hash(), f).expect("valid"))
        .expect("lifecycle");
    assert_eq!(
        (
            lifecycle.state,
            lifecycle.fence_epoch.get(),
            lifecycle.command_revision
        ),
        (crate::document::lifecycle::LifecycleState::Succeeded, 2, 4)
    );
}
