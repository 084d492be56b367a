import { join } from 'node:path';
import { loadOrCreateSecret } from '@docshare/auth';
import { openFileKeyStore, parseKek, rewrapAll, type RewrapReport } from '@docshare/personal-data';
import { dataDir, loadConfigOrExit, mongo, optionalPersonalData, personalData } from '@docshare/runtime/config';

/** Rewraps every data key under DATA_KEK's first key: MongoDB's data_keys with MONGO_URL, else DATA_DIR/keys. */
export const rotateKek = async (env: NodeJS.ProcessEnv): Promise<RewrapReport> => {
  if (env['MONGO_URL']) {
    const config = loadConfigOrExit(env, { mongo: mongo(), personalData: personalData() });
    const { connectMongo } = await import('@docshare/runtime/distributed');
    const { openMongoKeyStore } = await import('@docshare/personal-data/mongo');
    const { client, db } = await connectMongo(config.mongo.mongoUrl, config.mongo.commandDb, config.mongo);
    try {
      return await rewrapAll(await openMongoKeyStore(db), parseKek(config.personalData.kek));
    } finally {
      await client.close();
    }
  }
  const config = loadConfigOrExit(env, { dataDir: dataDir(), personalData: optionalPersonalData() });
  const kekText = config.personalData.kek ?? await loadOrCreateSecret(join(config.dataDir, 'secrets', 'data-kek'));
  // The key store's own lock refuses while `npm start` holds it.
  const store = await openFileKeyStore(join(config.dataDir, 'keys'));
  try {
    return await rewrapAll(store, parseKek(kekText));
  } finally {
    await store.close();
  }
};
