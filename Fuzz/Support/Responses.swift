import ANCS

extension DataSourceResponse {
  /// The tuples of either kind of response, as AttributeID and value, in wire order.
  var tuples: [(id: UInt8, value: [UInt8])] {
    switch self {
    case .notificationAttributes(let answer): return answer.attributes.map { ($0.id.rawValue, $0.value) }
    case .appAttributes(let answer): return answer.attributes.map { ($0.id.rawValue, $0.value) }
    }
  }

  /// The requested AttributeIDs that never arrived.
  var missingIDs: [UInt8] {
    switch self {
    case .notificationAttributes(let answer): return answer.missing.map(\.rawValue)
    case .appAttributes(let answer): return answer.missing.map(\.rawValue)
    }
  }
}
