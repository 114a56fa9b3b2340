//! What several of sluice-io's test files share.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nix::unistd::{geteuid, setfsuid, Uid};

/// The user id file permission checks are made for when the tests run as root: `nobody`.
const NOBODY: u32 = 65534;

/// Runs `work` on a thread whose file permissions are enforced, and returns its result.
///
/// Root passes every permission check, so a test of "permission denied" would prove nothing
/// there. When the tests run as root, the thread's file-system user id (which Linux keeps per
/// thread, and which alone decides file access) becomes `nobody`; that also drops root's
/// override capabilities for the thread. `root` — the test's temporary directory — is opened
/// to everyone first so that `nobody` meets the permission under test, not a locked parent.
/// Before `work` runs, a probe checks that permissions really are enforced, and fails the test
/// if not: such a test must never pass without having tested anything.
pub(crate) fn with_permissions_enforced<T: Send>(
    root: &Path,
    work: impl FnOnce() -> T + Send,
) -> T {
    if geteuid().is_root() {
        fs::set_permissions(root, fs::Permissions::from_mode(0o755)).expect("chmod the test root");
    }
    let probe = root.join("permission-probe");
    fs::create_dir(&probe).expect("mkdir probe");
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o555)).expect("chmod probe");
    let result = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if geteuid().is_root() {
                    setfsuid(Uid::from_raw(NOBODY));
                }
                assert!(
                    fs::write(probe.join("file"), "").is_err(),
                    "file permissions are not enforced on this thread"
                );
                work()
            })
            .join()
            .expect("the thread with permissions enforced panicked")
    });
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o755)).expect("chmod probe");
    fs::remove_dir(&probe).expect("rmdir probe");
    result
}
