import Runtime
import Wire

/// What a link has received and its engine has not yet taken (see `Inbox`).
public typealias PDUQueue = Inbox<[UInt8]>
