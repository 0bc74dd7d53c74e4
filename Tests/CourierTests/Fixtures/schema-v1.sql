-- Courier's database as schema v1 (migration courier.v1.downloads) wrote it: the first
-- released schema. Made by `courier get` (commit 007cdc8) and dumped with Python's sqlite3
-- iterdump; paths made relative to a test root. StoreTests migrates it forward.
BEGIN TRANSACTION;
CREATE TABLE "courierDownload" ("id" TEXT PRIMARY KEY, "mediaId" TEXT, "mediaType" TEXT, "remoteUrl" TEXT NOT NULL, "localFinalPath" TEXT NOT NULL, "partialPath" TEXT NOT NULL, "bytesReceived" INTEGER NOT NULL DEFAULT 0, "totalBytes" INTEGER, "etag" TEXT, "lastModified" TEXT, "resumable" BOOLEAN NOT NULL DEFAULT 1, "state" TEXT NOT NULL, "expectedSHA256" TEXT, "priority" INTEGER NOT NULL DEFAULT 0, "attemptCount" INTEGER NOT NULL DEFAULT 0, "lastErrorCode" TEXT, "lastErrorMessage" TEXT, "createdAt" DATETIME NOT NULL, "updatedAt" DATETIME NOT NULL, UNIQUE ("mediaType", "mediaId"));
INSERT INTO "courierDownload" VALUES('get-7c471a7af579db6d',NULL,NULL,'http://127.0.0.1:18777/small.bin','out/small.bin','out/small.bin.partial',1000,1000,'"3e8-1a2066b6418"','Mon, 23 Nov 2026 03:20:31 GMT',1,'completed',NULL,0,0,NULL,NULL,'2026-11-23 03:20:33.065','2026-11-23 03:20:33.107');
INSERT INTO "courierDownload" VALUES('big_1',NULL,NULL,'http://127.0.0.1:18777/big.bin?rate=1000000','out/big.bin','out/big.bin.partial',1450000,3000000,'"2dc6c0-1a2066b6418"','Mon, 23 Nov 2026 03:20:31 GMT',1,'paused',NULL,0,0,NULL,NULL,'2026-11-23 03:20:33.199','2026-11-23 03:20:34.628');
INSERT INTO "courierDownload" VALUES('gone',NULL,NULL,'http://127.0.0.1:18777/nothere.bin?api_key=REDACTED','out/gone.bin','out/gone.bin.partial',0,NULL,NULL,NULL,1,'failed',NULL,0,0,'E_HTTP_4XX','the server answered 404 Not Found','2026-11-23 03:20:34.715','2026-11-23 03:20:34.735');
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
INSERT INTO "grdb_migrations" VALUES('courier.v1.downloads');
CREATE INDEX "courierDownload_schedule" ON "courierDownload"("state", "priority", "createdAt");
COMMIT;
