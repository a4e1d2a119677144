/// A device's bonds, as its user manages them (an iPhone's "Forget This Device"): the
/// simulated links' `Keyring` and the Bluetooth host's `BondStore` both are one.
public protocol BondBook: AnyObject, Sendable {
  /// The addresses of the peers this device has a bond with, sorted.
  var bondedPeers: [String] { get }
  /// Forgets the bond with `peer` (an address as `bondedPeers` gives it), or every bond when
  /// nil; returns the addresses forgotten. Throws when the change cannot be kept (a bond
  /// file that cannot be written).
  @discardableResult func forget(_ peer: String?) throws -> [String]
}
