import Foundation

/// The `.partial` file a download writes into.
///
/// Bytes are gathered into a large buffer and written with one `pwrite` each: one write per
/// network buffer was measured ~20 % slower than curl (design.md). Beyond design.md: where
/// the file system allows `O_DIRECT`, whole aligned blocks skip the page cache (the copy into
/// it was most of a download's CPU in profiles), and with ``appendPipelined(_:)`` a full
/// buffer is written on the blocking pool while a second one fills (BENCHMARKS.md). Unaligned
/// heads and tails go through the page cache, with early write-back (`WriteBehind`).
/// The file is opened with `O_NOFOLLOW`, so a symlink planted at its path is refused.
/// Not thread-safe: one download task owns it (a background write owns only its buffer).
public final class PartialFile {
    /// The file's path.
    public let url: URL
    var fd: Int32
    /// Whether the file has no name yet (``init(unnamedAt:bufferSize:)``, ``materialize()``).
    var isUnnamed = false
    /// The buffer bytes gather in; `spare` is the other one, written in the background.
    var current: StagingBuffer
    var spare: StagingBuffer
    var staging: UnsafeMutableRawBufferPointer { current.bytes }
    /// The background write of a full buffer, and where it started (see ``appendPipelined(_:)``).
    var inFlight: Task<Bool, any Error>?
    var inFlightOffset: Int64 = 0
    var staged = 0
    /// The offset at which the next flushed byte lands.
    var writeOffset: Int64
    /// The bytes written to the file so far plus the staged ones.
    public private(set) var logicalLength: Int64
    /// A second descriptor with `O_DIRECT`, where the file system allows it: whole aligned
    /// blocks go to the disk without a copy into the page cache (the copy was most of a
    /// download's CPU in profiles), and leave nothing for the final fsync to write.
    var direct: Descriptor?
    var directFD: Int32 { direct?.fd ?? -1 }
    /// Direct writes start and end on multiples of this.
    static let directAlignment = 4096

    /// Opens (creating it and its parent directories if needed) the partial file at `url`;
    /// writing goes on at its end.
    public convenience init(url: URL, bufferSize: Int = 1 << 20) throws {
        try self.init(url: url, bufferSize: bufferSize, directIO: true)
    }

    /// As ``init(url:bufferSize:)``; `directIO: false` never opens the `O_DIRECT` descriptor
    /// (``DownloaderConfiguration/usesDirectIO``).
    convenience init(url: URL, bufferSize: Int, directIO: Bool) throws {
        try Durability.createFolder(url.deletingLastPathComponent())
        let (fd, size) = try Self.openRegular(url, flags: O_CREAT)
        self.init(url: url, fd: fd, writingAt: size, bufferSize: bufferSize, directIO: directIO)
    }

    /// Opens an existing (preallocated) partial file to write one segment of it, from
    /// `offset` on: nothing is truncated, and bytes land at their own offsets.
    public convenience init(segmentOf url: URL, writingAt offset: Int64, bufferSize: Int = 1 << 20) throws {
        let (fd, _) = try Self.openRegular(url, flags: 0)
        self.init(url: url, fd: fd, writingAt: offset, bufferSize: bufferSize, directIO: true)
    }

    init(url: URL, fd: Int32, writingAt offset: Int64, bufferSize: Int, directIO: Bool) {
        self.url = url
        self.fd = fd
        let size = (max(bufferSize, 64 << 10) + 4095) / 4096 * 4096
        self.current = StagingBuffer(count: size)
        self.spare = StagingBuffer(count: size)
        self.writeOffset = offset
        self.unsyncedStart = offset
        self.logicalLength = offset
        let directFD = directIO ? Self.openDirect(url.path) : -1
        self.direct = directFD >= 0 ? Descriptor(directFD) : nil
    }

    /// Opens a regular file for writing without following a symlink; returns it and its size.
    static func openRegular(_ url: URL, flags: Int32) throws -> (Int32, Int64) {
        let fd = open(url.path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | flags, 0o644)
        guard fd >= 0 else {
            let err = errno
            if err == ELOOP {
                throw CourierError(.invalidPath, "the partial file \(url.lastPathComponent) is a symbolic link; refusing to follow it")
            }
            throw error(err, "open", url)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            _ = closeDescriptor(fd)
            throw CourierError(.writeFailed, "\(url.lastPathComponent) is not a regular file")
        }
        return (fd, Int64(st.st_size))
    }

    /// Bytes that reached the file (through ``flush()``): the offset the next flush writes at.
    public var flushedLength: Int64 { inFlight == nil ? writeOffset : inFlightOffset }

    deinit {
        // A background write nobody settled may still use the descriptor: leave it open
        // then (callers settle on every path; this is the last guard against a reused fd).
        if fd >= 0, inFlight == nil { _ = closeDescriptor(fd) }
    }

    /// `O_DIRECT` is not in Swift's Glibc module; its value is per architecture.
    static func openDirect(_ path: String) -> Int32 {
        guard directFlag != 0 else { return -1 }
        return open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | directFlag)
    }

    private static let directFlag: Int32 = {
        var flag: Int32 = 0   // none elsewhere (Apple platforms have F_NOCACHE instead)
        #if os(Linux) && arch(x86_64)
        flag = 0o40000
        #elseif os(Linux) && arch(arm64)
        flag = 0o200000
        #endif
        return flag
    }()

    /// Cuts the file to `length` bytes (dropping staged bytes) and continues writing there.
    public func truncate(to length: Int64) throws {
        staged = 0
        guard ftruncate(fd, off_t(length)) == 0 else { throw Self.error(errno, "truncate", url) }
        writeOffset = length
        logicalLength = length
        unsyncedStart = length
    }

    /// Appends bytes; they reach the file when the buffer fills or on ``flush()``.
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        var remaining = bytes
        while !remaining.isEmpty {
            let room = staging.count - staged
            let n = min(room, remaining.count)
            UnsafeMutableRawBufferPointer(rebasing: staging[staged..<(staged + n)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: remaining[0..<n]))
            staged += n
            logicalLength += Int64(n)
            remaining = UnsafeRawBufferPointer(rebasing: remaining[n...])
            if staged == staging.count { try write(keepingUnalignedTail: true) }
        }
    }

    /// Whether appending `count` bytes would fill the buffer while the other one is still
    /// being written: call ``settle()`` first, so the write can go on in the background.
    public func wouldWait(appending count: Int) -> Bool {
        inFlight != nil && staged + count >= staging.count
    }

    /// Appends bytes; a full buffer is written in the background (on the blocking pool,
    /// straight to the disk with direct I/O) while the next one fills, so the network and
    /// the disk work at once. Call ``settle()`` before anything that needs the bytes in the
    /// file (a checkpoint, the final flush) and on every way out.
    public func appendPipelined(_ bytes: UnsafeRawBufferPointer) throws {
        var remaining = bytes
        while !remaining.isEmpty {
            let n = min(staging.count - staged, remaining.count)
            UnsafeMutableRawBufferPointer(rebasing: staging[staged..<(staged + n)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: remaining[0..<n]))
            staged += n
            logicalLength += Int64(n)
            remaining = UnsafeRawBufferPointer(rebasing: remaining[n...])
            guard staged == staging.count else { continue }
            let align = Self.directAlignment
            if let direct, inFlight == nil, writeOffset % Int64(align) == 0 {
                // Hand the full buffer to a background write; go on filling the other one.
                let job = current, length = staged, offset = writeOffset, fd = fd
                current = spare
                spare = job
                staged = 0
                inFlightOffset = offset
                writeOffset += Int64(length)
                inFlight = Self.launch(job, length: length, at: offset, direct: direct, buffered: fd, url: url)
            } else {
                try write(keepingUnalignedTail: true)
            }
        }
    }

    /// Waits for the background write, if any. When it failed, the file is cut back to
    /// where that write began (no hole, no bytes past it) and its error is thrown.
    public func settle() async throws {
        guard let job = inFlight else { return }
        inFlight = nil
        do {
            if try await job.value == false { direct = nil }   // direct I/O refused: buffered from now on
        } catch {
            staged = 0
            writeOffset = inFlightOffset
            logicalLength = inFlightOffset
            _ = ftruncate(fd, off_t(inFlightOffset))
            throw error
        }
        startWriteBehindIfDue()
    }

    static func launch(_ job: StagingBuffer, length: Int, at offset: Int64, direct: Descriptor, buffered: Int32, url: URL) -> Task<Bool, any Error> {
        EngineExecutor.current.throwingTask { try await Blocking.run { try writeWhole(job, length: length, at: offset, direct: direct, buffered: buffered, url: url) } }
    }

    /// A background write: the whole buffer at `offset`, directly when the file system
    /// takes it (returns true), else buffered (returns false).
    static func writeWhole(_ buffer: StagingBuffer, length: Int, at offset: Int64, direct: Descriptor, buffered: Int32, url: URL) throws -> Bool {
        var written = 0
        var useDirect = true
        if let err = EngineExecutor.diskFault(.write) { throw error(err, "write", url) }   // the simulator's disk
        while written < length {
            let n = pwrite(useDirect ? direct.fd : buffered, buffer.bytes.baseAddress! + written, length - written, off_t(offset + Int64(written)))
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EINVAL, useDirect, written == 0 { useDirect = false; continue }
                throw error(errno, "write", url)
            }
            written += n
        }
        return useDirect
    }

    /// Bytes written since the last write-behind request, and where they start.
    var unsyncedStart: Int64
    /// How many written bytes make the kernel start writing them back (see `WriteBehind`).
    static let writeBehindChunk: Int64 = 16 << 20

    /// Writes the staged bytes to the file (not yet to stable storage: see ``syncAndClose()``).
    public func flush() throws {
        try write(keepingUnalignedTail: false)
    }

    /// Writes what can go to the file in whole aligned blocks, keeping a short unaligned
    /// tail staged, so the next writes stay aligned for direct I/O. Returns the length the
    /// file holds (``flushedLength``): what a progress checkpoint may claim.
    @discardableResult
    public func checkpoint() throws -> Int64 {
        // Not with a background write under way: its bytes are not known to be there yet.
        guard inFlight == nil else { return inFlightOffset }
        try write(keepingUnalignedTail: directFD >= 0)
        return writeOffset
    }

    func write(keepingUnalignedTail: Bool) throws {
        defer { startWriteBehindIfDue() }
        let align = Self.directAlignment
        do {
            if directFD >= 0, staged > 0 {
                // Buffered up to the next aligned offset; then whole blocks straight to the disk
                // from the (aligned) start of the staging buffer.
                let head = min(staged, (align - Int(writeOffset % Int64(align))) % align)
                if head > 0 { try pwriteAll(fd, count: head); shiftStaging(by: head) }
                let blocks = staged / align * align
                if blocks > 0 {
                    do {
                        try pwriteAll(directFD, count: blocks)
                        shiftStaging(by: blocks)
                    } catch is DirectIORefused {
                        // The file system took the open but refuses the writes: buffered from now on.
                        direct = nil
                    }
                }
            }
            // A short tail may wait for more bytes, to keep the next direct write aligned.
            let keepTail = keepingUnalignedTail && directFD >= 0 && writeOffset % Int64(align) == 0 && staged < align
            if staged > 0, !keepTail {
                try pwriteAll(fd, count: staged)
                staged = 0
            }
        } catch {
            // Keep what reached the file; the staged rest is lost and the length says so.
            staged = 0
            logicalLength = writeOffset
            throw error
        }
    }

    /// Drops `n` written bytes from the front of the staging buffer.
    func shiftStaging(by n: Int) {
        if staged > n { staging.baseAddress!.copyMemory(from: staging.baseAddress! + n, byteCount: staged - n) }
        staged -= n
    }

    struct DirectIORefused: Error {}

    /// Writes the first `count` staged bytes at the write offset, advancing it.
    func pwriteAll(_ descriptor: Int32, count: Int) throws {
        if let err = EngineExecutor.diskFault(.write) { throw Self.error(err, "write", url) }   // the simulator's disk
        var written = 0
        while written < count {
            let n = pwrite(descriptor, staging.baseAddress! + written, count - written, off_t(writeOffset))
            if n < 0 {
                if errno == EINTR { continue }
                let err = errno
                if descriptor == directFD, err == EINVAL, written == 0 { throw DirectIORefused() }
                throw Self.error(err, "write", url)
            }
            written += n
            writeOffset += Int64(n)
        }
    }

    func startWriteBehindIfDue() {
        if unsyncedStart > writeOffset { unsyncedStart = writeOffset }   // cut back by a failed write
        if writeOffset - unsyncedStart >= Self.writeBehindChunk {
            WriteBehind.start(fd: fd, offset: unsyncedStart, length: writeOffset - unsyncedStart)
            unsyncedStart = writeOffset
        }
    }

    /// Flushes, forces the bytes to stable storage on the blocking pool (fsync blocks; the
    /// cooperative threads are few), and closes. When the sync fails the file is deleted (it
    /// is not known to hold its bytes) and the error thrown.
    public func syncAndClose() async throws {
        try await settle()
        let fd = try handOver(), url = self.url
        try await Blocking.run { try Self.syncAndClose(fd, url) }
    }

    /// Flushes and gives the descriptor up to the caller, who syncs and closes it with
    /// ``syncAndClose(_:_:)`` (in one blocking job with what follows, say the rename).
    func handOver() throws -> Int32 {
        precondition(inFlight == nil, "settle() before handing the descriptor over")
        try flush()
        defer { fd = -1; direct = nil }
        return fd
    }

    /// Flushes and closes. Safe to call twice.
    public func close() throws {
        guard fd >= 0, inFlight == nil else { return }
        defer {
            _ = closeDescriptor(fd); fd = -1
            direct = nil
        }
        try flush()
    }

}

/// `close(2)`, from where a method named `close` would shadow it.
func closeDescriptor(_ fd: Int32) -> Int32 { close(fd) }

/// Staging memory that a background write may still be reading: freed with its last user.
final class StagingBuffer: @unchecked Sendable { // written by one side at a time (PartialFile hands it over)
    let bytes: UnsafeMutableRawBufferPointer
    init(count: Int) { bytes = .allocate(byteCount: count, alignment: 4096) }
    deinit { bytes.deallocate() }
}

/// A file descriptor closed with its last user, so a background write never races a close.
final class Descriptor: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { _ = closeDescriptor(fd) }
}
