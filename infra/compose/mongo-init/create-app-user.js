// Runs once, on an empty data directory, as the root user (the mongo image's
// /docker-entrypoint-initdb.d): the app's own user, with readWrite on docshare's two databases.
const fs = require('fs');
const password = fs.readFileSync('/run/secrets/mongo_app_password', 'utf8').trim();
const admin = db.getSiblingDB('admin');
const roles = [{ role: 'readWrite', db: 'docshare' }, { role: 'readWrite', db: 'docshare_read' }];
try {
  admin.createUser({ user: 'docshare', pwd: password, roles });
} catch (error) {
  // The FerretDB stand-in (docker-compose.local.yml) authenticates but has no roles.
  if (!/not implemented/i.test(String(error.message))) throw error;
  admin.createUser({ user: 'docshare', pwd: password, roles: [] });
  print('create-app-user: roles are not supported by this server (FerretDB): user without roles');
}
print('create-app-user: user docshare created');
