-- Courier's database as schema v8 (migration courier.v8.uploads) left it: a completed
-- `courier get` (commit 1cf44fd, paths made relative to a test root), and two versions of
-- one film in one media group (v6), one paused with its Content-Type (v7). Dumped with
-- Python's sqlite3 iterdump. StoreTests migrates it to v9.
BEGIN TRANSACTION;
CREATE TABLE "courierDownload" ("id" TEXT PRIMARY KEY, "mediaId" TEXT, "mediaType" TEXT, "remoteUrl" TEXT NOT NULL, "localFinalPath" TEXT NOT NULL, "partialPath" TEXT NOT NULL, "bytesReceived" INTEGER NOT NULL DEFAULT 0, "totalBytes" INTEGER, "etag" TEXT, "lastModified" TEXT, "resumable" BOOLEAN NOT NULL DEFAULT 1, "state" TEXT NOT NULL, "expectedSHA256" TEXT, "priority" INTEGER NOT NULL DEFAULT 0, "attemptCount" INTEGER NOT NULL DEFAULT 0, "lastErrorCode" TEXT, "lastErrorMessage" TEXT, "createdAt" DATETIME NOT NULL, "updatedAt" DATETIME NOT NULL, "leaseOwner" TEXT, "leaseExpiresAt" DATETIME, "connections" INTEGER NOT NULL DEFAULT 1, "heldEtag" TEXT, "heldLastModified" TEXT, "heldBytes" INTEGER, "contentType" TEXT);
INSERT INTO "courierDownload" VALUES('get-be4cd04337fe3557',NULL,NULL,'http://127.0.0.1:18779/small.bin','out/small.bin','out/small.bin.partial',1000,1000,NULL,'Wed, 25 Nov 2026 08:54:02 GMT',1,'completed',NULL,0,0,NULL,NULL,'2026-11-25 08:54:04.182','2026-11-25 08:54:04.197',NULL,NULL,1,NULL,NULL,NULL,'application/octet-stream');
INSERT INTO "courierDownload" VALUES('media:film:a','film-a','Movie','http://127.0.0.1:18779/a.mkv','Downloads/film/film-a.mkv','Downloads/film/film-a.mkv.partial',524288,2097152,'"a1"',NULL,1,'paused',NULL,0,0,NULL,NULL,'2026-11-25 08:00:00.000','2026-11-25 08:00:01.000',NULL,NULL,1,NULL,NULL,NULL,'video/x-matroska');
INSERT INTO "courierDownload" VALUES('media:film:b','film-b','Movie','http://127.0.0.1:18779/b.mp4','Downloads/film/film-b.mp4','Downloads/film/film-b.mp4.partial',0,NULL,NULL,NULL,1,'queued',NULL,0,0,NULL,NULL,'2026-11-25 08:00:02.000','2026-11-25 08:00:02.000',NULL,NULL,1,NULL,NULL,NULL,NULL);
CREATE TABLE "courierHandOff" ("downloadId" TEXT PRIMARY KEY REFERENCES "courierDownload"("id") ON DELETE CASCADE, "keptBytes" INTEGER NOT NULL, "etag" TEXT, "lastModified" TEXT, "totalBytes" INTEGER, "resumable" BOOLEAN NOT NULL, "createdAt" DATETIME NOT NULL, "owner" TEXT);
CREATE TABLE "courierSegment" ("downloadId" TEXT NOT NULL REFERENCES "courierDownload"("id") ON DELETE CASCADE, "index" INTEGER NOT NULL, "start" INTEGER NOT NULL, "end" INTEGER NOT NULL, "received" INTEGER NOT NULL DEFAULT 0, PRIMARY KEY ("downloadId", "index"));
CREATE TABLE "courierUpload" ("id" TEXT PRIMARY KEY, "sourcePath" TEXT NOT NULL, "sourceSize" INTEGER NOT NULL, "sourceModified" DOUBLE NOT NULL, "kind" TEXT NOT NULL, "target" TEXT NOT NULL, "remoteId" TEXT, "partSize" INTEGER NOT NULL, "confirmedBytes" INTEGER NOT NULL DEFAULT 0, "createdAt" DATETIME NOT NULL, "updatedAt" DATETIME NOT NULL);
CREATE TABLE "courierUploadPart" ("uploadId" TEXT NOT NULL REFERENCES "courierUpload"("id") ON DELETE CASCADE, "number" INTEGER NOT NULL, "offset" INTEGER NOT NULL, "size" INTEGER NOT NULL, "etag" TEXT, "md5" TEXT NOT NULL, "sha256" TEXT NOT NULL, PRIMARY KEY ("uploadId", "number"));
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
INSERT INTO "grdb_migrations" VALUES('courier.v1.downloads');
INSERT INTO "grdb_migrations" VALUES('courier.v2.lease');
INSERT INTO "grdb_migrations" VALUES('courier.v3.segments');
INSERT INTO "grdb_migrations" VALUES('courier.v4.held');
INSERT INTO "grdb_migrations" VALUES('courier.v5.handoff');
INSERT INTO "grdb_migrations" VALUES('courier.v6.media-groups');
INSERT INTO "grdb_migrations" VALUES('courier.v7.content-type');
INSERT INTO "grdb_migrations" VALUES('courier.v8.uploads');
CREATE INDEX "courierDownload_schedule" ON "courierDownload"("state", "priority", "createdAt");
CREATE INDEX "courierDownload_media" ON "courierDownload"("mediaType", "mediaId");
COMMIT;
