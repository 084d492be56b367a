// Runs once, on an empty data directory, as the root user (the mongo image's
// /docker-entrypoint-initdb.d): the app's own user, with readWrite on docshare's two databases.
// The FerretDB 2.5 stand-in (docker-compose.local.yml) has no authorization: its createUser gives
// every user clusterAdmin and readWriteAnyDatabase whatever is asked; the log shows what was granted.
const fs = require('fs');
const password = fs.readFileSync('/run/secrets/mongo_app_password', 'utf8').trim();
const admin = db.getSiblingDB('admin');
const roles = [{ role: 'readWrite', db: 'docshare' }, { role: 'readWrite', db: 'docshare_read' }];
admin.createUser({ user: 'docshare', pwd: password, roles });
const granted = (admin.getUser('docshare')?.roles ?? []).map((r) => `${r.role}@${r.db}`).sort();
print(`create-app-user: user docshare created with roles ${granted.join(', ')}`);
