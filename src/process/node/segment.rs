//! A segment of memory that the processes of one node map: a file in `/dev/shm` (POSIX shared
//! memory, a tmpfs) made by one process under a name no other job or team can hold — the
//! maker's process id, the clock in nanoseconds and a counter of the process's segments —
//! opened and mapped by the others, and removed from `/dev/shm` as soon as every process has
//! mapped it ([`Segment::unlink`]), so that a crash afterwards leaves nothing behind: the
//! memory lives while a process maps it.
//!
//! **Private to the job's user.** The file is created with mode 0600 (whatever the umask),
//! never through a symbolic link, and every opener checks, on the descriptor it opened, that
//! the file is a regular file of its own user that nobody else may read or write: another user
//! of the node can neither read the job's data in the window before the name is removed nor
//! slip in a file of its own.
//!
//! **Reserved when made.** Extending a tmpfs file (`ftruncate`) reserves nothing, and the first
//! write past what the tmpfs has left would kill the process with `SIGBUS` in the middle of a
//! collective. The maker reserves every page instead (`posix_fallocate`), so that a `/dev/shm`
//! too small for the segment is an error when the team is built.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The directory of the segments' files.
const DIR: &str = "/dev/shm";
/// The prefix of their names.
const PREFIX: &str = "corecoll-";

/// Segments made by this process so far (part of the next one's name).
static MADE: AtomicU64 = AtomicU64::new(0);

/// A mapping of a node's segment into this process.
pub(crate) struct Segment {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory shared with other processes; what is written where and
// by whom is the protocol's (`rounds`), whose atomics order it; the pointer is valid until drop.
unsafe impl Send for Segment {}
// SAFETY: see `Send`.
unsafe impl Sync for Segment {}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment").field("len", &self.len).finish()
    }
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(DIR).join(name)
}

impl Segment {
    /// Makes a new segment of `len` bytes, zeroed, and maps it: the segment and its name.
    pub(crate) fn create(len: usize) -> io::Result<(Segment, String)> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!(
            "{PREFIX}{}-{nanos}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path(&name))?;
        // A new file's length is 0; its reserved pages read as zeros.
        let mapped = reserve(&file, len).and_then(|()| Segment::map(&file, len));
        if mapped.is_err() {
            let _ = Segment::unlink(&name);
        }
        Ok((mapped?, name))
    }

    /// `len` bytes of private memory, zeroed, laid out as a segment: for a node of one
    /// process, whose memory no other process maps, so that it needs no room in `/dev/shm`.
    pub(crate) fn private(len: usize) -> io::Result<Segment> {
        // SAFETY: a private anonymous read-write mapping of `len` bytes (at least one); the
        // kernel picks the address and zeroes the pages.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Segment {
            base: base.cast(),
            len,
        })
    }

    /// Maps the existing segment `name` of `len` bytes.
    pub(crate) fn open(name: &str, len: usize) -> io::Result<Segment> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path(name))?;
        let meta = file.metadata()?;
        check_private(&meta, name)?;
        if meta.len() < len as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{DIR}/{name} is shorter than {len} bytes"),
            ));
        }
        Segment::map(&file, len)
    }

    fn map(file: &File, len: usize) -> io::Result<Segment> {
        use std::os::fd::AsRawFd;
        // SAFETY: a shared read-write mapping of `len` bytes of an open file at least that
        // long; the kernel picks the address. The mapping outlives the descriptor.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Segment {
            base: base.cast(),
            len,
        })
    }

    /// Removes segment `name` from `/dev/shm` (the mappings stay).
    pub(crate) fn unlink(name: &str) -> io::Result<()> {
        std::fs::remove_file(path(name))
    }

    /// The first byte of the mapping (page-aligned).
    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// Reserves the `len` bytes of `file` (a new, empty file): every page allocated now, so that no
/// write into the mapping can fault for want of space later.
fn reserve(file: &File, len: usize) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    if len == 0 {
        return Ok(());
    }
    let len = libc::off_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "segment too long"))?;
    // SAFETY: an open descriptor; `posix_fallocate` only allocates the file's blocks.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match rc {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Fails unless `meta` (of the opened segment `name`) is a regular file of this process's
/// effective user with no permission for anyone else.
fn check_private(meta: &std::fs::Metadata, name: &str) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{DIR}/{name} {why}; a node's segment must be private to the job's user"),
        ))
    };
    if !meta.file_type().is_file() {
        return refuse("is not a regular file".to_string());
    }
    if meta.uid() != me {
        return refuse(format!("belongs to user {}, not {me}", meta.uid()));
    }
    if meta.mode() & 0o077 != 0 {
        return refuse(format!("has mode {:o}", meta.mode() & 0o7777));
    }
    Ok(())
}

/// Whether process id `pid` still exists: what a node's waits ask of the process they wait for
/// (a process that exited and was reaped no longer does).
#[cfg(any(test, feature = "mpi"))]
pub(crate) fn process_exists(pid: u32) -> bool {
    // SAFETY: signal 0 checks that the process exists (and may be signalled) without
    // signalling it.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len.max(1)) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_shared_by_its_mappings_and_outlives_its_name() {
        let (a, name) = Segment::create(4096).unwrap();
        let b = Segment::open(&name, 4096).unwrap();
        Segment::unlink(&name).unwrap();
        assert!(!path(&name).exists());
        // SAFETY: both map the same 4096 bytes; one thread.
        unsafe {
            a.base().add(100).write(42);
            assert_eq!(b.base().add(100).read(), 42);
            assert_eq!(b.base().add(4095).read(), 0);
        }
        assert!(Segment::open(&name, 4096).is_err());
        assert!(Segment::open("corecoll-no-such-segment", 64).is_err());
    }

    #[test]
    fn private_memory_is_zeroed_and_writable() {
        let s = Segment::private(2 * 4096).unwrap();
        // SAFETY: the mapping's 8192 bytes; one thread.
        unsafe {
            assert_eq!(s.base().add(8191).read(), 0);
            s.base().add(8191).write(7);
            assert_eq!(s.base().add(8191).read(), 7);
        }
    }

    #[test]
    fn a_segment_is_private_to_its_user_and_its_pages_are_reserved() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let (_a, name) = Segment::create(3 * 4096).unwrap();
        let meta = std::fs::metadata(path(&name)).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600, "created with mode 0600");
        // SAFETY: `geteuid` has no preconditions.
        assert_eq!(meta.uid(), unsafe { libc::geteuid() });
        // Allocated, not a sparse file (blocks of 512 bytes).
        assert!(meta.blocks() * 512 >= 3 * 4096, "{} blocks", meta.blocks());
        assert!(Segment::open(&name, 4096).is_ok());
        // A mode that lets others in is refused by the openers.
        std::fs::set_permissions(path(&name), std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Segment::open(&name, 4096).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("has mode 644"), "{e}");
        Segment::unlink(&name).unwrap();
        // A file of another user (where this process may make one: as root) is refused too.
        // SAFETY: `geteuid` has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let (_b, other) = Segment::create(4096).unwrap();
            std::os::unix::fs::chown(path(&other), Some(65534), None).unwrap();
            let e = Segment::open(&other, 4096).unwrap_err();
            assert!(e.to_string().contains("belongs to user 65534"), "{e}");
            Segment::unlink(&other).unwrap();
        }
        // A symbolic link is not followed.
        let link = format!("corecoll-test-link-{}", std::process::id());
        let (_c, target) = Segment::create(4096).unwrap();
        std::os::unix::fs::symlink(path(&target), path(&link)).unwrap();
        assert!(Segment::open(&link, 4096).is_err());
        std::fs::remove_file(path(&link)).unwrap();
        Segment::unlink(&target).unwrap();
    }
}
