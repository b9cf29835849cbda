// DynamoDB Local on the loopback interface only. The jar has no bind-address flag: its Jetty
// server is built with a port alone and listens on every interface, so anyone on the network could
// read and write every tenant's journal. This launcher builds the server exactly as the jar's own
// main does (same command-line arguments), then sets the host of its Jetty connector to 127.0.0.1
// before starting it. Compiled once by shared/local/dynamodb-local.ts with the jar on the classpath.
//
// Usage: java -cp LAUNCHER_DIR:DynamoDBLocal.jar:DynamoDBLocal_lib/* LoopbackDynamoDbLocal [jar arguments]
// Exits non-zero (an uncaught exception) if the server does not have the shape this relies on,
// rather than starting it on every interface.
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public final class LoopbackDynamoDbLocal {
  private LoopbackDynamoDbLocal() {}

  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    // The Jetty server is a private field: DynamoDB Local exposes no other way to reach it.
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) throw new IllegalStateException("DynamoDB Local built no connector");
    for (Connector connector : connectors) {
      if (!(connector instanceof ServerConnector)) {
        throw new IllegalStateException("DynamoDB Local built an unexpected connector: " + connector);
      }
      ((ServerConnector) connector).setHost("127.0.0.1");
    }
    proxy.start();
  }
}
