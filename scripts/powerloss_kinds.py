"""The kinds of transfer scripts/power-loss cuts the power under (issue 29).

A kind says what a round runs on the power-loss disk and what must hold afterwards:

  setup(r)        before the round's cut disk mounts (durable: r.durably runs commands on a
                  disk that is unmounted cleanly, which keeps everything)
  before(r)       on the cut disk, before the window (the "resumed" download's SIGKILL)
  window(r)       the commands run one after another while the power may go at any moment
  databases       the SQLite files (relative to the disk) that must pass integrity_check
  after_cut(r, w) the invariants on what the disk holds after the cut (w: the window's
                  commands, their exit codes and output); returns violations
  again(r, w)     the commands run afterwards on that disk, each to its end: what the user
                  or the app would run after the reboot
  at_end(r)       what must hold once they ended; returns violations

Paths given to the commands are under the mount point (r.mnt), which is the same for a
round's every mount; the checks after the cut read the disk itself (r.disk).
"""
import hashlib, json, os, sqlite3, subprocess, time, uuid


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""): h.update(block)
    return h.hexdigest()


def sha_of(data): return hashlib.sha256(data).hexdigest()


def rows(db, sql, args=()):
    """Rows of a query on a copy of `db` (opening a database recovers its WAL, which is the
    next run's to do, not the checker's); [] when the table is not there yet."""
    copy = db + ".check"
    for suffix in ("", "-wal"):
        if os.path.exists(db + suffix): subprocess.run(["cp", db + suffix, copy + suffix])
    try:
        con = sqlite3.connect(copy)
        try: return con.execute(sql, args).fetchall()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e): return []
            raise
        finally: con.close()
    finally:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(copy + suffix): os.remove(copy + suffix)


class Window:
    """What the window's commands did: exit code (None: still running at the cut, or never
    started) and standard output, by position."""
    def __init__(self, n):
        self.codes, self.out = [None] * n, [""] * n

    def ok(self, i): return self.codes[i] == 0


class Kind:
    name = ""
    span = 2.0           # seconds: the cut comes up to this long after the window opens
    databases = []
    env = {}

    def available(self, c): return True
    def setup(self, r): pass
    def before(self, r): pass
    def window(self, r): return []
    def after_cut(self, r, w): return []
    def again(self, r, w): return []
    def at_end(self, r): return []


# Downloads: `courier get` of a generated 6 MiB file from `courier serve --rate 6M`.

class Download(Kind):
    databases = ["db/courier.sqlite"]

    def __init__(self, variant):
        self.name = variant
        # The server's rate is per connection: four ranges at 700 KB/s take over two seconds,
        # so the ranges' progress is committed (each second) before many cuts.
        self.span = 4.0 if variant == "segmented" else 1.6
        self.path = "f.bin?rate=700000" if variant == "segmented" else "f.bin"

    def args(self, c, mnt):
        a = [c.courier, "get", c.url(self.path), "-o", os.path.join(mnt, "out", "f.bin"), "--db", os.path.join(mnt, "db", "courier.sqlite"), "-q"]
        return a + (["-x", "4", "--min-split-size", "1M"] if self.name == "segmented" else [])

    def setup(self, r):
        for d in ("db", "out"): os.makedirs(os.path.join(r.disk, d))
        r.c.serve_file(0)
        r.allowed = {r.c.digests[0]}
        r.want = r.c.digests[0]
        if self.name == "again":   # version 0 whole and durable; then the server's file changes
            first = r.durably([self.args(r.c, r.mnt)])
            if first[0].returncode != 0: return f"the first download failed: {first[0].stderr.strip()[-300:]}"
            r.c.serve_file(1)
            r.allowed = {r.c.digests[0], r.c.digests[1]}
            r.want = r.c.digests[1]

    def before(self, r):
        if self.name == "resumed":   # a SIGKILL first: its writes stay in the (simulated) page cache
            p = subprocess.Popen(self.args(r.c, r.mnt), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(r.rng.uniform(0.2, 0.8)); p.kill(); p.wait()

    def window(self, r): return [self.args(r.c, r.mnt)]

    def partial(self, base):
        p = os.path.join(base, "out", "f.bin.partial")
        return os.path.getsize(p) if os.path.exists(p) else 0

    def after_cut(self, r, w):
        v = []
        final = os.path.join(r.disk, "out", "f.bin")
        for (path,) in rows(os.path.join(r.disk, "db", "courier.sqlite"), "SELECT localFinalPath FROM courierDownload WHERE state = 'completed'"):
            on_disk = r.on_disk(path)
            if not os.path.exists(on_disk): v.append(f"a completed record without its file ({path})")
            elif os.path.getsize(on_disk) != r.c.size or sha(on_disk) not in r.allowed: v.append(f"a completed record whose file has wrong bytes ({path})")
        if os.path.exists(final) and sha(final) not in r.allowed: v.append("a final file with wrong bytes")
        if w.ok(0) and not (os.path.exists(final) and sha(final) == r.want):
            v.append("the command exited 0, yet after the cut its file is gone or not the version it fetched")
        if not w.ok(0) and self.name != "segmented":   # a segmented partial has its whole length from the start
            r.c.refetched.append(max(0, r.partial_at_cut - self.partial(r.disk)))
        return v

    def again(self, r, w): return [self.args(r.c, r.mnt)]

    def at_end(self, r):
        final = os.path.join(r.mnt, "out", "f.bin")
        return [] if os.path.exists(final) and sha(final) == r.want else ["the run after the cut left the wrong file"]


# Attachments: `courier attachments save` then `sync` up to a writable `courier serve`; and
# `sync` down, driven by the app's table.

def check_synced(r, db, folder, originals):
    """No SYNCED attachment without its file; a SYNCED one's file has the original bytes."""
    v = []
    for att_id, local in rows(db, "SELECT id, local_uri FROM attachments WHERE state = 3"):
        path = os.path.join(folder, local) if local else None
        if not path or not os.path.exists(path): v.append(f"attachment {att_id} SYNCED without its file")
        elif att_id in originals and sha(path) != originals[att_id]: v.append(f"attachment {att_id} SYNCED with wrong bytes")
    return v


class Attachments(Kind):
    """The app's database and its attachments folder, under app/ on the disk."""
    databases = ["app/app.sqlite"]
    span = 2.5

    def db(self, base): return os.path.join(base, "app", "app.sqlite")

    def setup(self, r): os.makedirs(os.path.join(r.disk, "app"))


class AttachmentsUp(Attachments):
    name = "attach-up"

    def setup(self, r):
        super().setup(r)
        src = os.path.join(r.c.work, f"src-{r.n}"); os.makedirs(src)
        r.sources = {}
        for i in range(r.rng.randint(2, 3)):
            path = os.path.join(src, f"photo{i}.jpg")
            data = r.rng.randbytes(r.rng.randint(512 << 10, 2 << 20))
            with open(path, "wb") as f: f.write(data)
            r.sources[path] = sha_of(data)

    def save(self, r): return [r.c.courier, "attachments", "save", "--db", self.db(r.mnt), "--remote", r.c.remote] + sorted(r.sources)
    def sync(self, r): return [r.c.courier, "attachments", "sync", "--db", self.db(r.mnt), "--remote", r.c.remote, "--limit-rate", "4M"]

    def window(self, r): return [self.save(r), self.sync(r)]

    def after_cut(self, r, w):
        v = check_synced(r, self.db(r.disk), os.path.join(r.disk, "app", "attachments"), {})
        saved = dict(rows(self.db(r.disk), "SELECT id, local_uri FROM attachments"))
        if w.ok(0):   # saved: every attachment is kept, with its file
            ids = w.out[0].split()
            originals = dict(zip(ids, (r.sources[p] for p in sorted(r.sources))))
            r.originals = originals
            for att_id, digest in originals.items():
                local = saved.get(att_id)
                path = os.path.join(r.disk, "app", "attachments", local) if local else None
                if not path or not os.path.exists(path) or sha(path) != digest:
                    v.append(f"attachment {att_id} was saved (exit 0), and after the cut its row or file is gone or wrong")
            v += check_synced(r, self.db(r.disk), os.path.join(r.disk, "app", "attachments"), originals)
        return v

    def again(self, r, w):
        # Saved before the cut: only the sync is owed. Else the app saves them again.
        return ([] if w.ok(0) else [self.save(r)]) + [self.sync(r)]

    def at_end(self, r):
        v = []
        folder = os.path.join(r.mnt, "app", "attachments")
        synced = rows(self.db(r.mnt), "SELECT id, local_uri, state FROM attachments")
        if any(state != 3 for _, _, state in synced): v.append(f"after the sync, attachments not SYNCED: {[s for _, _, s in synced]}")
        found = set()
        for att_id, local, _ in synced:
            path = os.path.join(folder, local) if local else ""
            remote = os.path.join(r.c.remote_dir, "files", os.path.basename(local or ""))
            if os.path.exists(path):
                digest = sha(path); found.add(digest)
                if not os.path.exists(remote) or sha(remote) != digest: v.append(f"attachment {att_id}: the remote copy is missing or differs")
        if set(r.sources.values()) - found: v.append("a saved file has no synced attachment")
        return v


class AttachmentsDown(Attachments):
    name = "attach-down"

    def setup(self, r):
        super().setup(r)
        ids = [str(uuid.UUID(int=r.rng.getrandbits(128), version=4)) for _ in range(r.rng.randint(2, 3))]
        r.originals = {}
        os.makedirs(os.path.join(r.c.remote_dir, "files"), exist_ok=True)
        for att_id in ids:
            data = r.rng.randbytes(r.rng.randint(512 << 10, 2 << 20))
            with open(os.path.join(r.c.remote_dir, "files", f"{att_id}.jpg"), "wb") as f: f.write(data)
            r.originals[att_id] = sha_of(data)
        con = sqlite3.connect(self.db(r.disk))   # the app's table, durable before the mount
        con.execute("CREATE TABLE checklists (id INTEGER PRIMARY KEY, photo_id TEXT)")
        con.executemany("INSERT INTO checklists (photo_id) VALUES (?)", [(i,) for i in ids]); con.commit(); con.close()

    def sync(self, r):
        return [r.c.courier, "attachments", "sync", "--db", self.db(r.mnt), "--remote", r.c.remote,
                "--watch-sql", "SELECT photo_id FROM checklists", "--watch-extension", "jpg"]

    def window(self, r): return [self.sync(r)]
    def after_cut(self, r, w): return check_synced(r, self.db(r.disk), os.path.join(r.disk, "app", "attachments"), r.originals)
    def again(self, r, w): return [self.sync(r)]

    def at_end(self, r):
        v = check_synced(r, self.db(r.mnt), os.path.join(r.mnt, "app", "attachments"), r.originals)
        states = rows(self.db(r.mnt), "SELECT id, state FROM attachments")
        if sorted(i for i, s in states if s == 3) != sorted(r.originals): v.append(f"after the sync, attachments not all SYNCED: {states}")
        return v


# Media: two versions of a movie from the origin's Jellyfin routes, with metadata.json.

class Media(Kind):
    name = "media"
    databases = ["lib/.courier-media.sqlite"]
    span = 2.0

    def setup(self, r):
        os.makedirs(os.path.join(r.disk, "lib"))
        if r.rng.random() < 0.5:   # the first version already in the library, durable
            done = r.durably([self.download(r, "v1")])
            if done[0].returncode != 0: return f"the first version's download failed: {done[0].stderr.strip()[-300:]}"

    def download(self, r, version):
        return [r.c.courier, "media", "download", "--root", os.path.join(r.mnt, "lib"), "--server", r.c.url(""), "--version-id", version, "film1", "-q"]

    def window(self, r): return [self.download(r, "v1"), self.download(r, "v2")]

    def entries(self, base):
        """metadata.json's versions, or a violation when it is there but not whole JSON."""
        path = os.path.join(base, "lib", "Downloads", "film1", "metadata.json")
        if not os.path.exists(path): return [], []
        try:
            with open(path) as f: return json.load(f).get("versions", []), []
        except ValueError as e: return [], [f"metadata.json does not parse: {e}"]

    def __init__(self, digests): self.digests = digests   # each version's SHA-256, as served

    def check_entries(self, base, need):
        versions, v = self.entries(base)
        for entry in versions:
            path = os.path.join(base, "lib", "Downloads", "film1", entry.get("fileName", "?"))
            if not os.path.exists(path): v.append(f"metadata.json names {entry.get('fileName')}, which is not there")
            elif sha(path) != self.digests.get(entry.get("versionId")): v.append(f"metadata.json names {entry.get('fileName')}, whose bytes are wrong")
        listed = {e.get("versionId") for e in versions}
        for version in need:
            if version not in listed: v.append(f"version {version} downloaded (exit 0), not in metadata.json after the cut")
        return v

    def after_cut(self, r, w): return self.check_entries(r.disk, [ver for i, ver in enumerate(("v1", "v2")) if w.ok(i)])
    def again(self, r, w): return [self.download(r, "v1"), self.download(r, "v2")]
    def at_end(self, r): return self.check_entries(r.mnt, ["v1", "v2"])


# Documents: `courier doc write` of a read-in-place document into a folder remote.

class Document(Kind):
    name = "doc"
    databases = ["docs/.courier-documents.sqlite"]
    span = 0.6

    def remote(self, r): return "file://" + os.path.join(r.c.work, f"doc-remote-{r.n}")

    def setup(self, r):
        remote_dir = self.remote(r)[len("file://"):]
        os.makedirs(remote_dir); os.makedirs(os.path.join(r.disk, "docs"))
        old, new = r.rng.randbytes(r.rng.randint(1 << 20, 3 << 20)), r.rng.randbytes(r.rng.randint(1 << 20, 3 << 20))
        with open(os.path.join(remote_dir, "notes.bin"), "wb") as f: f.write(old)
        r.new_file = os.path.join(r.c.work, f"doc-new-{r.n}.bin")
        with open(r.new_file, "wb") as f: f.write(new)
        r.old, r.new = sha_of(old), sha_of(new)
        base = [r.c.courier, "doc"]
        done = r.durably([base + ["placeholders", "--dir", self.dir(r.mnt), "--remote", self.remote(r)],
                          base + ["bytes", "--dir", self.dir(r.mnt), "--remote", self.remote(r), "notes.bin"]])
        if any(p.returncode != 0 for p in done): return f"the document's first read failed: {done[-1].stderr[-300:]}"

    def dir(self, base): return os.path.join(base, "docs")
    def write(self, r): return [r.c.courier, "doc", "write", "--dir", self.dir(r.mnt), "--remote", self.remote(r), "notes.bin", r.new_file]
    def sync(self, r): return [r.c.courier, "doc", "sync", "--dir", self.dir(r.mnt), "--remote", self.remote(r)]

    def window(self, r): return [self.write(r)]

    def after_cut(self, r, w):
        path = os.path.join(r.disk, "docs", "notes.bin")
        now = sha(path) if os.path.exists(path) else None
        if now not in (r.old, r.new): return ["the document is neither its old version nor its new one, whole"]
        if w.ok(0) and now != r.new: return ["doc write exited 0, yet after the cut the document is the old version"]
        r.written = now == r.new
        return []

    def again(self, r, w): return [self.sync(r)] if r.written else [self.write(r)]

    def at_end(self, r):
        v = []
        local = os.path.join(r.mnt, "docs", "notes.bin")
        if not os.path.exists(local) or sha(local) != r.new: v.append("after the rerun the document is not the new version")
        remote = os.path.join(self.remote(r)[len("file://"):], "notes.bin")
        if not os.path.exists(remote) or sha(remote) != r.new: v.append("after the rerun the remote document is missing or not the new version")
        copies = [p for p in os.listdir(os.path.join(r.mnt, "docs")) if "conflict" in p]
        if copies: v.append(f"a conflict with nobody: the only writer's own upload was kept as {copies}")
        left = [p for p in os.listdir(os.path.dirname(remote)) if p != "notes.bin"]
        if left: v.append(f"the remote holds more than the document: {left}")
        return v


# Uploads: `courier put` of a 24 MiB file to S3 (moto) or tus, in 5 MiB parts, throttled.

class Put(Kind):
    databases = ["db/courier.sqlite"]
    span = 3.0
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}

    def __init__(self, to): self.name = f"put-{to}"; self.to = to

    def available(self, c): return bool(c.s3_endpoint if self.to == "s3" else c.tus_url)

    def setup(self, r):
        os.makedirs(os.path.join(r.disk, "db"))
        r.source = os.path.join(r.c.work, f"up-{r.n}.bin")
        data = r.rng.randbytes(r.rng.randint(12 << 20, 24 << 20))
        with open(r.source, "wb") as f: f.write(data)
        r.digest = sha_of(data)
        if self.to == "s3":
            r.bucket = f"power-{r.c.seed}-{r.n}"
            r.c.s3().create_bucket(Bucket=r.bucket)
            r.target = f"s3://{r.bucket}/up.bin?endpoint={r.c.s3_endpoint}"
        else:
            r.target = f"{r.c.tus_url}/files"

    def put(self, r):
        return [r.c.courier, "put", r.source, r.target, "--db", os.path.join(r.mnt, "db", "courier.sqlite"), "--part-size", "5M",
                "-x", "2", "--limit-rate", "12M", "-q"]

    def window(self, r): return [self.put(r)]
    def again(self, r, w): return [self.put(r)]

    def at_end(self, r):
        if self.to == "s3":
            s3 = r.c.s3()
            try: body = s3.get_object(Bucket=r.bucket, Key="up.bin")["Body"].read()
            except Exception as e: return [f"the object is not there after the rerun: {e}"]
            v = [] if sha_of(body) == r.digest else [f"the object holds {len(body)} bytes, not the file's (parts lost or sent twice)"]
            left = s3.list_multipart_uploads(Bucket=r.bucket).get("Uploads") or []
            if left: v.append(f"{len(left)} multipart upload(s) left behind on the server")
            return v
        path = os.path.join(r.c.tus_dir, os.path.basename(r.source))
        return [] if os.path.exists(path) and sha(path) == r.digest else ["the tus server's file is not the source's bytes"]
