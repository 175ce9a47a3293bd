//! Fault injector (being written).
use super::Device;
/// Rates of each fault, per packet.
#[derive(Clone, Debug, Default)]
pub struct FaultConfig {}
/// A device wrapper that injects faults.
pub struct FaultInjector<D: Device> { pub inner: D, pub cfg: FaultConfig }
