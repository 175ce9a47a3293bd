//! What the interface reads of the engine: its counters, its channel and its eager limit.
//!
//! The entry points take these from the running engine when a call needs them (nothing is
//! read or copied on the communication path), and `MPI_Finalize` leaves the last ones in the
//! process's state so that the counters can still be read after it.

use mpich_channel::adi::AdiCounters;

/// A snapshot of the engine, for one `MPI_T` call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Readings {
    /// Every layer's counters.
    pub counters: AdiCounters,
    /// The eager limit the engine uses (longer messages take the rendezvous protocol).
    pub eager_max: usize,
    /// The lanes point-to-point runs on (`MPI_LANES`; 1 below `MPI_THREAD_MULTIPLE`).
    pub lanes: usize,
}

impl Readings {
    /// The snapshot of a running engine.
    pub fn of(adi: &mpich_channel::Adi, lanes: usize) -> Readings {
        Readings {
            counters: adi.counters(),
            eager_max: adi.eager_max(),
            lanes,
        }
    }

    /// Adds the counters of another lane's engine (its own copies and the channel copies it
    /// made; the channel's and the device's counters are lane 0's, counted once).
    pub fn add_lane(&mut self, adi: &mpich_channel::Adi) {
        let c = adi.counters();
        self.counters.adi.copies += c.adi.copies;
        self.counters.adi.bytes += c.adi.bytes;
        self.counters.channel.channel.copies += c.channel.channel.copies;
        self.counters.channel.channel.bytes += c.channel.channel.bytes;
    }
}
