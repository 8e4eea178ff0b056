//! The disk behind `--data-dir`: free and total space, the device and its mount, the
//! filesystem, solid-state or rotational, and the device model. Also the RAM
//! filesystem check behind the tmpfs warning.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::human_bytes;

/// `f_type` of tmpfs (linux/magic.h).
const TMPFS_MAGIC: i64 = 0x0102_1994;
/// `f_type` of ramfs (linux/magic.h).
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// One mount from /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Device number "major:minor".
    pub dev: (u32, u32),
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type ("ext4", "tmpfs").
    pub fs_type: String,
    /// The mount source, usually the device path ("/dev/sda3").
    pub source: String,
}

/// Facts about the directory's disk, in report order.
pub fn facts(dir: &Path) -> Vec<(String, String)> {
    let mut f = vec![("data_dir".to_string(), dir.display().to_string())];
    let unknown = || "unknown".to_string();
    f.push((
        "data_fs".to_string(),
        match space(dir) {
            Some((free, total)) => format!("{} free of {}", human_bytes(free), human_bytes(total)),
            None => unknown(),
        },
    ));
    let mount = mount_of(dir);
    f.push((
        "data_dev".to_string(),
        match &mount {
            Some(m) => format!("{} on {} ({})", m.source, m.mount_point.display(), m.fs_type),
            None => unknown(),
        },
    ));
    let disk = mount.as_ref().and_then(|m| disk_dir(m.dev));
    let rotational = disk.as_deref().and_then(|d| read_trim(&d.join("queue/rotational")));
    f.push((
        "data_disk".to_string(),
        match (rotational.as_deref(), &mount) {
            (Some("0"), _) => "solid state".to_string(),
            (Some("1"), _) => "rotational (as the kernel reports it; virtual disks often claim this)".to_string(),
            (_, Some(m)) if m.dev.0 == 0 => format!("no block device ({})", m.fs_type),
            _ => unknown(),
        },
    ));
    f.push((
        "data_disk_model".to_string(),
        disk.as_deref().and_then(device_model).unwrap_or_else(unknown),
    ));
    f
}

/// A warning when `dir` is on a RAM filesystem, which would benchmark memory
/// instead of a disk.
pub fn ram_fs_warning(dir: &Path) -> Option<String> {
    let kind = match fs_magic(dir)? {
        TMPFS_MAGIC => "tmpfs",
        RAMFS_MAGIC => "ramfs",
        _ => return None,
    };
    Some(format!(
        "--data-dir {} is on {kind}, a RAM filesystem: persistent engines there benchmark memory, not a disk",
        dir.display()
    ))
}

fn c_path(dir: &Path) -> Option<CString> {
    CString::new(dir.as_os_str().as_bytes()).ok()
}

fn fs_magic(dir: &Path) -> Option<i64> {
    let path = c_path(dir)?;
    // SAFETY: statfs is plain old data, filled on success.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `s` is writable.
    if unsafe { libc::statfs(path.as_ptr(), &mut s) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    Some(s.f_type as i64)
}

/// (free for unprivileged users, total) bytes of the filesystem holding `dir`.
pub fn space(dir: &Path) -> Option<(u64, u64)> {
    crate::engine::storage::disk_space(dir)
}

/// The mount holding `dir`: the mount of its device number with the longest mount
/// point that is a prefix of the directory's real path.
pub fn mount_of(dir: &Path) -> Option<Mount> {
    let real = std::fs::canonicalize(dir).ok()?;
    let dev = std::fs::metadata(&real).ok()?.dev();
    let dev = (libc::major(dev), libc::minor(dev));
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mounts = parse_mountinfo(&text);
    let best = |same_dev: bool| {
        mounts
            .iter()
            .filter(|m| (!same_dev || m.dev == dev) && real.starts_with(&m.mount_point))
            .max_by_key(|m| m.mount_point.as_os_str().len())
            .cloned()
    };
    best(true).or_else(|| best(false))
}

/// Parses /proc/self/mountinfo (later duplicates of a mount point win, as mounts
/// stack).
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut out: Vec<Mount> = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.len() < 5 || fields.len() < sep + 3 {
            continue;
        }
        let Some((maj, min)) = fields[2].split_once(':') else {
            continue;
        };
        let (Ok(maj), Ok(min)) = (maj.parse(), min.parse()) else {
            continue;
        };
        let m = Mount {
            dev: (maj, min),
            mount_point: PathBuf::from(unescape(fields[4])),
            fs_type: fields[sep + 1].to_string(),
            source: unescape(fields[sep + 2]),
        };
        out.retain(|o| o.mount_point != m.mount_point);
        out.push(m);
    }
    out
}

/// Undoes mountinfo's octal escapes ("\040" is a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The sysfs directory of the whole disk behind a block device number: a partition
/// resolves to its parent, a device-mapper or md device to its first underlying
/// device.
fn disk_dir(dev: (u32, u32)) -> Option<PathBuf> {
    if dev.0 == 0 {
        return None;
    }
    let mut dir = std::fs::canonicalize(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
    if dir.join("partition").exists() {
        dir = dir.parent()?.to_path_buf();
    }
    if let Ok(mut slaves) = std::fs::read_dir(dir.join("slaves"))
        && let Some(Ok(first)) = slaves.next()
        && let Ok(slave) = std::fs::canonicalize(first.path())
    {
        dir = if slave.join("partition").exists() {
            slave.parent()?.to_path_buf()
        } else {
            slave
        };
    }
    Some(dir)
}

fn device_model(disk: &Path) -> Option<String> {
    if let Some(model) = read_trim(&disk.join("device/model")).filter(|m| !m.is_empty()) {
        return Some(model);
    }
    let name = disk.file_name()?.to_string_lossy().into_owned();
    read_trim(&disk.join("device/vendor"))
        .filter(|v| !v.is_empty())
        .map(|v| format!("unknown ({name}, vendor {v})"))
}

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
31 27 8:3 / /mnt/my\\040disk rw,relatime shared:1 - xfs /dev/sda3 rw
";

    #[test]
    fn mountinfo_fields_and_stacking() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 4, "{m:?}");
        let shm = m.iter().find(|m| m.mount_point == Path::new("/dev/shm")).unwrap();
        assert_eq!(shm.dev, (0, 27), "the later mount of a point wins");
        let disk = m.iter().find(|m| m.fs_type == "xfs").unwrap();
        assert_eq!(disk.mount_point, Path::new("/mnt/my disk"));
        assert_eq!(disk.source, "/dev/sda3");
        assert_eq!(disk.dev, (8, 3));
    }

    #[test]
    fn the_root_filesystem_resolves() {
        let m = mount_of(Path::new("/")).expect("a mount for /");
        assert_eq!(m.mount_point, Path::new("/"));
        let f = facts(Path::new("/"));
        assert_eq!(f.len(), 5);
        assert!(f[1].1.contains(" free of "), "{f:?}");
    }

    #[test]
    fn ram_filesystems_are_flagged() {
        if fs_magic(Path::new("/dev/shm")) == Some(TMPFS_MAGIC) {
            let w = ram_fs_warning(Path::new("/dev/shm")).unwrap();
            assert!(w.contains("tmpfs"), "{w}");
        }
        if fs_magic(Path::new("/proc")).is_some() {
            assert_eq!(ram_fs_warning(Path::new("/proc")), None);
        }
    }
}
