//! The threads a CPU forward pass splits its products over.
//!
//! Natively a pool of its own (rayon) with the requested number of threads; in the browser one
//! thread, the caller's (the page's other threads are workers with memories of their own, which
//! take parts of the rows instead: see [`super::parts`]).

use crate::error::ModelError;

/// A fixed number of threads for the CPU path.
pub struct Threads {
    count: usize,
    #[cfg(not(target_family = "wasm"))]
    pool: Option<rayon::ThreadPool>,
}

impl Threads {
    /// `count` threads (at least one). In wasm there is only the caller's thread.
    pub fn new(count: usize) -> Result<Self, ModelError> {
        #[cfg(target_family = "wasm")]
        {
            let _ = count;
            Ok(Self { count: 1 })
        }
        #[cfg(not(target_family = "wasm"))]
        {
            let count = count.max(1);
            let pool = match count {
                1 => None,
                _ => Some(
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(count)
                        .thread_name(|i| format!("sieve-cpu-{i}"))
                        .build()
                        .map_err(|e| ModelError::Backend(format!("starting {count} threads: {e}")))?,
                ),
            };
            Ok(Self { count, pool })
        }
    }

    /// The threads this machine has (one in the browser).
    pub fn available() -> usize {
        #[cfg(target_family = "wasm")]
        return 1;
        #[cfg(not(target_family = "wasm"))]
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Splits `out`, rows of `stride` values each, into runs of whole rows and calls
    /// `work(first_row, run)` on each, in parallel across the threads.
    pub fn rows(&self, out: &mut [f32], stride: usize, work: impl Fn(usize, &mut [f32]) + Sync) {
        let rows = out.len() / stride.max(1);
        #[cfg(not(target_family = "wasm"))]
        if let Some(pool) = &self.pool
            && rows >= 2 * MIN_ROWS
        {
            use rayon::prelude::*;
            // A few runs per thread even out threads that start late.
            let per_run = rows.div_ceil(4 * self.count).max(MIN_ROWS);
            pool.install(|| {
                out.par_chunks_mut(per_run * stride).enumerate().for_each(|(i, run)| work(i * per_run, run));
            });
            return;
        }
        let _ = rows;
        work(0, out);
    }

    /// Runs `work(i)` for each `i` in `0..n`, in parallel across the threads.
    pub fn each(&self, n: usize, work: impl Fn(usize) + Sync) {
        #[cfg(not(target_family = "wasm"))]
        if let Some(pool) = &self.pool
            && n > 1
        {
            use rayon::prelude::*;
            pool.install(|| (0..n).into_par_iter().for_each(&work));
            return;
        }
        (0..n).for_each(work);
    }
}

/// Fewest rows worth handing to another thread.
#[cfg(not(target_family = "wasm"))]
const MIN_ROWS: usize = 16;
