//! Each image a cell shows is also written to a file under the run's state directory, so a
//! client that gives the model only the structured content (where an image block never
//! reaches it) still gives it a path it can open. The folder is the run's own, outside the
//! workspace, made at the first image and removed when the run ends.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::Mutex;
use tools_core::Image;

/// An image of a cell as the structured result shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ImageFile {
    /// The file it was written to (outside the workspace, removed when the run ends); absent
    /// when it could not be written (`notes` says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `image/png`.
    pub media_type: String,
    /// Its size in bytes.
    pub bytes: usize,
    /// Its width in pixels, when its header says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Its height in pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

impl ImageFile {
    /// The line of the text that names the file: `[image 1 at PATH: image/png, 280×218,
    /// 5123 bytes]`.
    pub(crate) fn line(&self, number: usize) -> String {
        let size = match (self.width, self.height) {
            (Some(width), Some(height)) => format!(", {width}×{height}"),
            _ => String::new(),
        };
        match &self.path {
            Some(path) => format!(
                "[image {number} at {path}: {}{size}, {} bytes]",
                self.media_type, self.bytes
            ),
            None => format!(
                "[image {number}: {}{size}, {} bytes, not written to a file]",
                self.media_type, self.bytes
            ),
        }
    }
}

/// The run's image folder: where it goes, and the folder once made.
#[derive(Debug)]
pub(crate) struct ImageFiles {
    /// The run's state directory.
    under: PathBuf,
    state: Mutex<Folder>,
}

#[derive(Debug, Default)]
struct Folder {
    /// Made at the first image; dropping it removes it and everything in it.
    made: Option<tempfile::TempDir>,
    /// How many images the run has written, to name the next.
    written: usize,
}

impl ImageFiles {
    /// The image folder of a run whose state directory is `under`; nothing is made yet.
    pub(crate) fn new(under: PathBuf) -> Self {
        ImageFiles {
            under,
            state: Mutex::new(Folder::default()),
        }
    }

    /// Writes each of `images` to a file of its own and describes it; an image that could
    /// not be written is described without a path, and the error is returned beside it.
    pub(crate) async fn save(&self, images: &[Image]) -> (Vec<ImageFile>, Option<String>) {
        let mut state = self.state.lock().await;
        let first = state.written + 1;
        state.written += images.len();
        let folder = match &state.made {
            Some(made) => Ok(made.path().to_path_buf()),
            None => {
                let under = self.under.clone();
                match blocking(move || make_folder(&under)).await {
                    Ok(made) => {
                        let path = made.path().to_path_buf();
                        state.made = Some(made);
                        Ok(path)
                    }
                    Err(error) => Err(error),
                }
            }
        };
        drop(state);
        let mut files = Vec::with_capacity(images.len());
        let mut failed = None;
        for (index, image) in images.iter().enumerate() {
            let (width, height) = png_size(&image.data).unzip();
            let mut file = ImageFile {
                path: None,
                media_type: image.mime_type.clone(),
                bytes: image.data.len(),
                width,
                height,
            };
            let written = match &folder {
                Ok(folder) => {
                    let path = folder.join(format!("image-{}.png", first + index));
                    let (target, data) = (path.clone(), image.data.clone());
                    blocking(move || std::fs::write(&target, data))
                        .await
                        .map(|()| path)
                }
                Err(error) => Err(std::io::Error::new(error.kind(), error.to_string())),
            };
            match written {
                Ok(path) => file.path = Some(path.display().to_string()),
                Err(error) => {
                    failed.get_or_insert_with(|| {
                        format!(
                            "the images could not be written under {}: {error}",
                            self.under.display()
                        )
                    });
                }
            }
            files.push(file);
        }
        (files, failed)
    }

    /// Removes the folder and what is in it (the run ends), and the run's state directory
    /// when nothing else is left in it.
    pub(crate) async fn remove(&self) {
        let Some(made) = self.state.lock().await.made.take() else {
            return;
        };
        let under = self.under.clone();
        let removed = blocking(move || {
            made.close()?;
            // Only an empty folder goes: a worker's files stay where they are.
            let _ = std::fs::remove_dir(&under);
            Ok(())
        })
        .await;
        if let Err(error) = removed {
            tracing::warn!(%error, "the run's image folder could not be removed");
        }
    }
}

/// A folder of its own under `under` (two runs of one conversation name never share one).
fn make_folder(under: &Path) -> std::io::Result<tempfile::TempDir> {
    std::fs::create_dir_all(under)?;
    tempfile::Builder::new()
        .prefix("eval-images-")
        .tempdir_in(under)
}

/// The width and height of a PNG, from its header.
pub(crate) fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let width = u32::from_be_bytes(bytes[16..20].try_into().ok()?);
    let height = u32::from_be_bytes(bytes[20..24].try_into().ok()?);
    Some((width, height))
}

/// Runs blocking file work on tokio's blocking threads, off the async ones.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(std::io::Error::other(error)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(width.to_be_bytes());
        png.extend(height.to_be_bytes());
        png
    }

    #[tokio::test]
    async fn eval_4_each_image_is_a_file_under_the_run_state_and_goes_with_the_run() {
        let state = tempfile::tempdir().unwrap();
        let under = state.path().join("runs/conversation-1");
        let files = ImageFiles::new(under.clone());
        let (first, failed) = files.save(&[Image::png(png(2, 3))]).await;
        assert_eq!(failed, None);
        let (second, _) = files.save(&[Image::png(png(4, 5))]).await;
        let [first] = first.as_slice() else {
            panic!("{first:?}")
        };
        let path = PathBuf::from(first.path.clone().unwrap());
        assert!(path.starts_with(&under), "{path:?}");
        assert!(path.ends_with("image-1.png"), "{path:?}");
        assert_eq!(std::fs::read(&path).unwrap(), png(2, 3));
        assert_eq!(
            (first.width, first.height, first.bytes),
            (Some(2), Some(3), 24)
        );
        assert_eq!(
            first.line(1),
            format!("[image 1 at {}: image/png, 2×3, 24 bytes]", path.display())
        );
        assert!(second[0].path.as_deref().unwrap().ends_with("image-2.png"));
        files.remove().await;
        assert!(!path.exists());
        assert!(!under.exists(), "the empty run folder goes too");
    }

    #[tokio::test]
    async fn eval_4_an_image_that_cannot_be_written_says_why_and_keeps_its_size() {
        let state = tempfile::tempdir().unwrap();
        // A file where the folder should be: nothing can be made under it.
        std::fs::write(state.path().join("runs"), "").unwrap();
        let files = ImageFiles::new(state.path().join("runs/conversation-1"));
        let (saved, failed) = files.save(&[Image::png(png(2, 3))]).await;
        assert_eq!(saved[0].path, None);
        assert_eq!(saved[0].bytes, 24);
        assert!(failed.unwrap().contains("could not be written"));
        assert_eq!(
            saved[0].line(1),
            "[image 1: image/png, 2×3, 24 bytes, not written to a file]"
        );
    }
}
