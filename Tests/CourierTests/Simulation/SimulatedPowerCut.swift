import CourierTestSupport
import Foundation
@testable import CourierCore

/// The world's disk as a power cut leaves it (issue 46). It learns what is on stable storage
/// the way a disk does: from the engine's syncs (``DiskFaults``, asked before each one). A
/// file's sync makes what it holds then durable; a folder's sync makes the names it holds
/// then durable (a rename, a link, a new file or folder inside it). At the cut, each file
/// keeps either what it held at its last sync (nothing, if it never had one) or everything
/// written since, and each folder either the names it held at its last sync or its names of
/// now, each drawn from the seed: a write or a rename the engine did not sync may be lost,
/// or may have reached the disk anyway, independently of the others (the rename of a file
/// whose bytes were not synced can survive without them, as on ext4 without
/// `auto_da_alloc`). What the model does not lose: part of a write (a file is one or the
/// other), and a database commit (the simulator's SQLite is in memory: every commit is
/// durable, as with `synchronous=FULL`; the power-loss campaign cuts real SQLite files).
///
/// The system's own files (`system-task-…`, the background transfers' downloads) are the
/// system's: they stay as they are. Files are told apart by inode, which tmpfs never reuses
/// (a counter): on another file system a freed partial's inode could name the next file and
/// mix the two up, so a world gets a power cut only on tmpfs (``canCut(_:)``).
final class DurableDisk: DiskFaults, @unchecked Sendable { // state under `lock`
    private struct Key: Hashable { let device: UInt64; let inode: UInt64 }
    private struct Entry { let key: Key; let isFolder: Bool }

    private let lock = NSLock()
    private let root: String
    /// The simulated disk's faults, asked first (a failed sync makes nothing durable).
    private let inner: (any DiskFaults)?
    /// What each file held at its last sync.
    private var contents: [Key: Data] = [:]
    /// The names each folder held at its last sync.
    private var names: [Key: [String: Entry]] = [:]
    private var draws: SplitMix
    /// The folders whose last sync failed; at the cut, whether one had.
    private var unsyncedFolders: Set<String> = []
    private var cutAfterAFailedFolderSync = false

    /// A disk on which everything under `root` is durable now (the world starts there).
    init(root: URL, inner: (any DiskFaults)?, draws: SplitMix) {
        self.root = root.resolvingSymlinksInPath().standardizedFileURL.path
        self.inner = inner
        self.draws = draws
        settle()
    }

    /// Whether the world's folder is on tmpfs, where this model holds (the simulator puts it
    /// in /dev/shm where it can).
    static func canCut(_ root: URL) -> Bool {
        root.resolvingSymlinksInPath().path.hasPrefix("/dev/shm/")
    }

    /// Whether the cut came while a folder's last sync had failed: a name deleted there may
    /// come back whatever the engine does (a cancel's partial, beside no record: litter, not
    /// a wrong file).
    var cutAfterFailedFolderSync: Bool { lock.withLock { cutAfterAFailedFolderSync } }

    func fault(_ operation: DiskOperation, fd: Int32) -> Int32? {
        let err = inner?.fault(operation, fd: fd)
        guard operation == .sync else { return err }
        lock.withLock {
            var st = stat()
            if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, let path = Self.path(of: fd) {
                if err == nil { unsyncedFolders.remove(path) } else { unsyncedFolders.insert(path) }
            }
            if err == nil { noteSync(fd) }
        }
        return err
    }

    private static func path(of fd: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")   // not a descriptor of this process: no path
    }

    /// What `fd` names now becomes durable, when it is under the world's folder.
    private func noteSync(_ fd: Int32) {
        guard let path = Self.path(of: fd), path == root || path.hasPrefix(root + "/") else { return }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return }
        let key = Key(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        switch st.st_mode & S_IFMT {
        case S_IFDIR: names[key] = Self.entries(of: "/proc/self/fd/\(fd)")
        case S_IFREG: contents[key] = Self.read("/proc/self/fd/\(fd)")
        default: break
        }
    }

    /// The cut: every file and folder under the world's folder is rewritten as the disk holds
    /// it after the power came back. Returns what changed, one line a path (sorted, sizes
    /// only: inode numbers differ from run to run, so they never reach the trace).
    func cut() -> [String] {
        lock.withLock {
            cutAfterAFailedFolderSync = cutAfterAFailedFolderSync || !unsyncedFolders.isEmpty
            unsyncedFolders = []
            var now: [Key: [String: Entry]] = [:]
            var bytes: [Key: Data] = [:]
            var paths: [String: Data?] = [:]   // what each path holds before the cut (nil: a folder)
            Self.walk(root, into: &now, &bytes, &paths)
            var choice: [Key: Bool] = [:]   // per file or folder: true, it keeps what it holds now
            func keepsNow(_ key: Key) -> Bool {
                if let made = choice[key] { return made }
                let made = draws.next() % 2 == 0
                choice[key] = made
                return made
            }
            // What the disk holds after the cut: folders and files by path, in path order.
            var after: [(path: String, data: Data?)] = []
            func build(_ folder: Key, _ path: String, depth: Int) {
                guard depth < 16 else { return }
                let listing = (now[folder] != nil && keepsNow(folder)) ? now[folder]! : (names[folder] ?? [:])
                for name in listing.keys.sorted() where !name.hasPrefix("system-task-") {
                    let entry = listing[name]!, child = path + "/" + name
                    if entry.isFolder {
                        after.append((child, nil))
                        build(entry.key, child, depth: depth + 1)
                    } else {
                        let current = bytes[entry.key]
                        after.append((child, current != nil && keepsNow(entry.key) ? current! : (contents[entry.key] ?? Data())))
                    }
                }
            }
            var st = stat()
            guard lstat(root, &st) == 0 else { return ["power: the world's folder is gone"] }
            build(Key(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)), root, depth: 0)
            // Rewritten: everything but the system's files goes, then what the disk holds.
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []) where !name.hasPrefix("system-task-") {   // an empty folder: nothing to remove
                try? FileManager.default.removeItem(atPath: root + "/" + name)   // checked below: the walk after says what is there
            }
            for (path, data) in after {
                if let data {
                    _ = FileManager.default.createFile(atPath: path, contents: data)   // checked below: the walk after says what is there
                } else {
                    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)   // checked below, as above
                }
            }
            var lines: [String] = []
            let afterByPath = Dictionary(after.map { ($0.path, $0.data) }, uniquingKeysWith: { a, _ in a })
            for path in Set(paths.keys).union(afterByPath.keys).sorted() where !path.hasPrefix(root + "/system-task-") {
                let name = String(path.dropFirst(root.count + 1))
                switch (paths[path], afterByPath[path]) {
                case (nil, let a?): lines.append("power: \(name) back (\(a.map { "\($0.count) B" } ?? "folder"))")
                case (let b?, nil): lines.append("power: \(name) lost (\(b.map { "\($0.count) B" } ?? "folder"))")
                case (let b?, let a?) where b != a: lines.append("power: \(name) \(b?.count ?? 0) B → \(a?.count ?? 0) B")
                default: break
                }
            }
            names = [:]
            contents = [:]
            if settleLocked().filter({ !$0.key.hasPrefix(root + "/system-task-") }) != afterByPath.filter({ !$0.key.hasPrefix(root + "/system-task-") }) { lines.append("power: the folder was not rewritten as drawn") }
            return lines
        }
    }

    /// Everything under the world's folder is durable as it is now.
    private func settle() { lock.withLock { _ = settleLocked() } }

    /// Returns the tree it found, by path (for the check after a cut).
    private func settleLocked() -> [String: Data?] {
        var now: [Key: [String: Entry]] = [:]
        var bytes: [Key: Data] = [:]
        var paths: [String: Data?] = [:]
        Self.walk(root, into: &now, &bytes, &paths)
        names = now
        contents = bytes
        return paths
    }

    /// Every folder's names and every file's bytes under `folder`, by key and by path.
    private static func walk(_ folder: String, into names: inout [Key: [String: Entry]], _ bytes: inout [Key: Data], _ paths: inout [String: Data?]) {
        var st = stat()
        guard lstat(folder, &st) == 0 else { return }
        let key = Key(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        let listing = entries(of: folder)
        names[key] = listing
        for (name, entry) in listing {
            let path = folder + "/" + name
            if entry.isFolder {
                paths[path] = .some(nil)
                walk(path, into: &names, &bytes, &paths)
            } else {
                let data = bytes[entry.key] ?? read(path)
                bytes[entry.key] = data
                paths[path] = data
            }
        }
    }

    /// The names in a folder: its files and folders (nothing else is made there).
    private static func entries(of folder: String) -> [String: Entry] {
        var found: [String: Entry] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {   // gone meanwhile: no names
            var st = stat()
            guard lstat(folder + "/" + name, &st) == 0 else { continue }
            let kind = st.st_mode & S_IFMT
            guard kind == S_IFDIR || kind == S_IFREG else { continue }
            found[name] = Entry(key: Key(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)), isFolder: kind == S_IFDIR)
        }
        return found
    }

    private static func read(_ path: String) -> Data {
        (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()   // unreadable: as empty (the world's files are its own)
    }
}
