import Foundation

/// The contents of a UTF-8 text file; errors say what went wrong in a few words.
func readTextFile(_ path: String) throws -> String {
  guard let data = FileManager.default.contents(atPath: path) else {
    var isDirectory: ObjCBool = false
    if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
      throw FileProblem("no such file")
    }
    throw FileProblem(isDirectory.boolValue ? "is a directory" : "cannot be read (permissions?)")
  }
  guard let text = String(data: data, encoding: .utf8) else { throw FileProblem("is not UTF-8 text") }
  return text
}

struct FileProblem: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
