//! The run's kernels: one per language, started on the first cell and reused after, replaced
//! after a crash or a `reset`, and stopped with the run (`Run::on_shutdown("kernels", …)`).

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::Mutex;
use tools_core::{Run, Shutdown};

use crate::Language;
use crate::images::ImageFiles;
use crate::kernel::{Kernel, Launch};

/// The kernel factory bound to a run (CORE-1): where kernels start, and the live ones.
pub struct Kernels {
    pub(crate) launch: Launch,
    pub(crate) live: Mutex<HashMap<Language, Kernel>>,
    /// Why a language's last kernel went away without a reset, said once by the next cell.
    pub(crate) lost: Mutex<HashMap<Language, String>>,
    /// Where the cells' images are written, under the run's state directory.
    pub(crate) images: ImageFiles,
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernels")
            .field("launch", &self.launch)
            .finish_non_exhaustive()
    }
}

impl Kernels {
    /// Kernels for `run`: in its workspace root, inside its sandbox when it has one (EVAL-9).
    pub fn new(run: &Run) -> Arc<Kernels> {
        Arc::new(Kernels {
            launch: Launch {
                root: run.workspace.root().to_path_buf(),
                sandbox: run.sandbox.clone(),
            },
            live: Mutex::new(HashMap::new()),
            lost: Mutex::new(HashMap::new()),
            images: ImageFiles::new(run.state_dir()),
        })
    }
}

impl Shutdown for Kernels {
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let kernels: Vec<Kernel> = self.live.lock().await.drain().map(|(_, k)| k).collect();
            futures::future::join_all(kernels.into_iter().map(Kernel::stop)).await;
            // The images were the run's: they go with it.
            self.images.remove().await;
        })
    }
}
