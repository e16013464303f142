//! The connections `zhi mcp --listen` holds (docs/mcp.md#over-http): at most a cap, so that
//! connections that never finish a request cannot take every file the process may open and
//! shut out a client holding the token. A connection is *waiting* until it brings a request
//! with the token; when every slot is taken, the oldest waiting connection is closed to make
//! room, so a client with the token gets in however many half-sent requests hold the others.
//! Connections that brought the token are never closed for room: when they fill every slot, a
//! new connection waits for one of them to end.
//!
//! The process's soft limit on open files is raised to its hard one first, as servers do,
//! and the cap is half of it: the runs the server starts need the rest.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The fewest and the most connections held at once, whatever the file limit.
const MIN_CAP: usize = 8;
const MAX_CAP: usize = 256;
/// The soft limit asked for when the hard one is unlimited.
const UNLIMITED_ASK: u64 = 65_536;

/// The slots, and the connections that have not brought the token yet, oldest first.
pub(super) struct Connections {
    free: Arc<Semaphore>,
    waiting: Mutex<BTreeMap<u64, CancellationToken>>,
    next: AtomicU64,
    cap: usize,
}

/// One connection's slot: freed when dropped.
pub(super) struct Slot {
    /// Cancelled when the slot is taken back for a newer connection.
    pub evicted: CancellationToken,
    pub admit: Admit,
    _permit: OwnedSemaphorePermit,
}

/// Says that a connection brought a request with the token: it is no longer closed for room.
#[derive(Clone)]
pub(super) struct Admit {
    id: u64,
    connections: Arc<Connections>,
}

impl Admit {
    pub(super) fn admitted(&self) {
        self.connections.stop_waiting(self.id);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.admit.connections.stop_waiting(self.admit.id);
    }
}

impl Connections {
    /// At most `cap` connections.
    pub(super) fn new(cap: usize) -> Arc<Connections> {
        Arc::new(Connections {
            free: Arc::new(Semaphore::new(cap)),
            waiting: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
            cap,
        })
    }

    /// How many connections are held at most.
    pub(super) fn cap(&self) -> usize {
        self.cap
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, CancellationToken>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection `id` is no longer one to close for room (it brought the token, or ended).
    fn stop_waiting(&self, id: u64) {
        self.waiting().remove(&id);
    }

    /// A slot for a connection just accepted: a free one, else the oldest waiting
    /// connection's (closed now), else the first to be freed. `None` once the slots are
    /// closed (never, while the server runs).
    pub(super) async fn take(self: &Arc<Self>) -> Option<Slot> {
        let permit = match Arc::clone(&self.free).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                let oldest = self.waiting().pop_first();
                if let Some((_, evicted)) = oldest {
                    evicted.cancel();
                }
                Arc::clone(&self.free).acquire_owned().await.ok()?
            }
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let evicted = CancellationToken::new();
        self.waiting().insert(id, evicted.clone());
        Some(Slot {
            evicted,
            admit: Admit {
                id,
                connections: Arc::clone(self),
            },
            _permit: permit,
        })
    }
}

/// Raises the soft limit on open files to the hard one, and answers with the cap that fits
/// the limit in force: half of it, between [`MIN_CAP`] and [`MAX_CAP`].
pub(super) fn cap_for_file_limit() -> usize {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    // An unlimited hard limit is one no system gives a process's files: ask for plenty.
    let want = limit.maximum.unwrap_or(UNLIMITED_ASK);
    let soft = match limit.current {
        Some(soft) if soft < want => {
            let raised = Rlimit {
                current: Some(want),
                maximum: limit.maximum,
            };
            // Refused: the soft limit stays as it was.
            setrlimit(Resource::Nofile, raised).map_or(Some(soft), |()| Some(want))
        }
        other => other,
    };
    let files = soft.unwrap_or(u64::MAX);
    usize::try_from(files / 2)
        .unwrap_or(MAX_CAP)
        .clamp(MIN_CAP, MAX_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_oldest_waiting_connection_makes_room_and_an_admitted_one_never_does() {
        let c = Connections::new(2);
        let first = c.take().await.unwrap();
        let second = c.take().await.unwrap();
        first.admit.admitted();
        // Full: the second (waiting) is closed for the third, never the first (admitted).
        let third = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            let taking = c.take();
            tokio::pin!(taking);
            tokio::select! {
                slot = &mut taking => slot,
                () = second.evicted.cancelled() => {
                    drop(second);
                    taking.await
                }
            }
        })
        .await
        .unwrap()
        .unwrap();
        assert!(!first.evicted.is_cancelled());
        third.admit.admitted();
        // Both admitted: a fourth waits until one ends.
        let fourth = c.take();
        tokio::pin!(fourth);
        let early = tokio::time::timeout(std::time::Duration::from_millis(50), &mut fourth).await;
        assert!(
            early.is_err(),
            "a slot was taken from an admitted connection"
        );
        drop(first);
        assert!(fourth.await.is_some());
        assert_eq!(c.cap(), 2);
    }
}
