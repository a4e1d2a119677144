import Links
import Sockets

/// The event loop that reads the tests' socket links (the process's executor stays Swift's
/// pool). Tests of the loop itself, and of shutting one down, make loops of their own.
public let testLoop = EventLoop()
