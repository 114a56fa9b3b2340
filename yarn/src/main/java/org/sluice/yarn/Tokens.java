package org.sluice.yarn;

import java.io.IOException;
import java.nio.ByteBuffer;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.client.util.YarnClientUtils;

/**
 * The security tokens that go into the workers' launch contexts. On a cluster with Kerberos,
 * NodeManagers download a container's files, and the workers reach the file system, with
 * delegation tokens the submitter obtained; without Kerberos there are none.
 */
final class Tokens {
  private Tokens() {}

  /**
   * Delegation tokens of {@code fs} (where the files are staged), obtained before the
   * application is submitted and given in its master's launch context, so that the
   * ResourceManager renews them while the application runs; null without Kerberos. The AMRM
   * token, which only the master may use, is never among them.
   */
  static ByteBuffer forWorkers(Configuration conf, FileSystem fs) throws IOException {
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

  private static ByteBuffer serialize(Credentials credentials) throws IOException {
    DataOutputBuffer out = new DataOutputBuffer();
    credentials.writeTokenStorageToStream(out);
    return ByteBuffer.wrap(out.getData(), 0, out.getLength());
  }
}
