//! Reading a file that must be a regular one without blocking on a special one. It lives here,
//! in the leaf every crate may use, because the language-server client reads the files it
//! syncs the same way the tools do, and depends on nothing above this crate.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Reads a file that must be a regular one, never blocking on a special one: it is opened
/// non-blocking (opening a named pipe would otherwise wait for a writer), checked on the open
/// handle, then read. A folder, pipe, socket or device is an `InvalidInput` error saying what
/// it is. Every tool reads files through this or tools-core's `Workspace::read`.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    read_regular_with_metadata(path).map(|(bytes, _)| bytes)
}

/// [`read_regular`], with the file's metadata as the open handle had it before the read (a
/// cache keyed by it notices a write that raced the read the next time it looks).
pub fn read_regular_with_metadata(path: &Path) -> std::io::Result<(Vec<u8>, std::fs::Metadata)> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        let kind = kind_of(&metadata.file_type());
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is {kind}, not a regular file", path.display()),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok((bytes, metadata))
}

fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    match file_type.is_dir() {
        true => "a folder",
        false => special_kind(file_type).unwrap_or("not a regular file"),
    }
}

/// What a file type is when it is neither a regular file nor a folder, in the words errors
/// use ("a named pipe (FIFO)", "a socket", "a device"); `None` for those two.
pub fn special_kind(file_type: &std::fs::FileType) -> Option<&'static str> {
    if file_type.is_fifo() {
        Some("a named pipe (FIFO)")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_block_device() || file_type.is_char_device() {
        Some("a device")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_anything_else_is_refused_saying_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "text").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"text");
        let error = read_regular(dir.path()).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
        assert!(
            error
                .to_string()
                .ends_with("is a folder, not a regular file")
        );
        // A device opens without blocking and is refused before any read.
        let error = read_regular(Path::new("/dev/zero")).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("is a device, not a regular file")
        );
    }
}
