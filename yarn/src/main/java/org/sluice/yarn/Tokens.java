package org.sluice.yarn;

import java.io.IOException;
import java.nio.ByteBuffer;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.client.util.YarnClientUtils;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;

/**
 * The security tokens that go into containers' launch contexts. On a cluster with Kerberos,
 * NodeManagers download a container's files, and the application master reaches the file
 * system, with delegation tokens the submitter obtained; without Kerberos there are none, and
 * these return empty token sets.
 */
final class Tokens {
  private Tokens() {}

  /**
   * For the application master: delegation tokens of {@code fs} (where the files are staged)
   * that the ResourceManager renews while the application runs; null without Kerberos.
   */
  static ByteBuffer forMaster(Configuration conf, FileSystem fs) throws IOException {
    if (!UserGroupInformation.isSecurityEnabled()) {
      return null;
    }
    String renewer = YarnClientUtils.getRmPrincipal(conf);
    if (renewer == null || renewer.isEmpty()) {
      throw new IOException("no Kerberos principal for the ResourceManager to renew tokens");
    }
    Credentials credentials = new Credentials();
    fs.addDelegationTokens(renewer, credentials);
    return serialize(credentials);
  }

  /**
   * For the workers: the master's own tokens minus the one for the ResourceManager, which only
   * the master may use.
   */
  static ByteBuffer forWorkers() throws IOException {
    Credentials all = UserGroupInformation.getCurrentUser().getCredentials();
    Credentials forWorkers = new Credentials();
    for (Token<?> token : all.getAllTokens()) {
      if (!token.getKind().equals(AMRMTokenIdentifier.KIND_NAME)) {
        forWorkers.addToken(token.getService(), token);
      }
    }
    return serialize(forWorkers);
  }

  private static ByteBuffer serialize(Credentials credentials) throws IOException {
    DataOutputBuffer out = new DataOutputBuffer();
    credentials.writeTokenStorageToStream(out);
    return ByteBuffer.wrap(out.getData(), 0, out.getLength());
  }
}
