import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * Hadoop's own test cluster for Weir's tests: a MiniDFSCluster (a NameNode and a DataNode,
 * WebHDFS on) and a MiniYARNCluster (a ResourceManager and NodeManagers whose containers
 * are real local processes), on loopback, in one JVM.
 *
 * <pre>
 * java -cp 'jars/*:classes' MiniHadoopCluster WORK_DIR CONF_DIR NODE_MANAGERS NM_MEMORY_MB \
 *     QUEUES RUN_DIR
 * </pre>
 *
 * QUEUES is a comma-separated list of capacity-scheduler queues beneath root (the capacity
 * shared evenly). Once both clusters serve, the client configuration is written to CONF_DIR
 * (core-site.xml, hdfs-site.xml, yarn-site.xml: a HADOOP_CONF_DIR) and one line goes to
 * stdout, "ready" followed by tab-separated key=value pairs. The clusters stop once no
 * process that uses them is alive (see awaitNoUsers).
 */
public final class MiniHadoopCluster {
  private MiniHadoopCluster() {}

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable failure) {
      // The clusters' threads are not daemons: without the exit a failed start would hang.
      failure.printStackTrace();
      System.exit(1);
    }
  }

  private static void run(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println(
          "usage: MiniHadoopCluster WORK_DIR CONF_DIR NODE_MANAGERS NM_MEMORY_MB QUEUES RUN_DIR");
      System.exit(2);
    }
    File work = new File(args[0]).getAbsoluteFile();
    File confDir = new File(args[1]).getAbsoluteFile();
    int nodeManagers = Integer.parseInt(args[2]);
    int nodeManagerMemoryMb = Integer.parseInt(args[3]);
    String[] queues = args[4].split(",");
    File runDir = new File(args[5]).getAbsoluteFile();

    Configuration base = new Configuration();
    base.set("hadoop.tmp.dir", new File(work, "tmp").getPath());
    base.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(work, "dfs").getPath());
    base.setInt("dfs.replication", 1);
    base.setBoolean("dfs.webhdfs.enabled", true);
    // One DataNode: a failed pipeline has no other node to be replaced by.
    base.set("dfs.client.block.write.replace-datanode-on-failure.policy", "NEVER");
    MiniDFSCluster dfs = new MiniDFSCluster.Builder(base).numDataNodes(1).build();
    dfs.waitActive();

    YarnConfiguration yarn = new YarnConfiguration(dfs.getConfiguration(0));
    yarn.set("fs.defaultFS", dfs.getURI().toString());
    // Nothing listens beyond loopback.
    yarn.set("yarn.resourcemanager.bind-host", "127.0.0.1");
    yarn.set("yarn.nodemanager.bind-host", "127.0.0.1");
    yarn.set("yarn.timeline-service.bind-host", "127.0.0.1");
    // MiniYARNCluster writes its own value over yarn.nodemanager.resource.memory-mb.
    yarn.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", nodeManagerMemoryMb);
    yarn.setInt("yarn.nodemanager.resource.memory-mb", nodeManagerMemoryMb);
    yarn.setInt("yarn.scheduler.minimum-allocation-mb", 128);
    yarn.setInt("yarn.scheduler.maximum-allocation-mb", nodeManagerMemoryMb);
    // A full disk would mark the only node unhealthy and every application would wait.
    yarn.set("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage",
        "100.0");
    // Containers are scheduled on NodeManager heartbeats: twice a second instead of once.
    yarn.setInt("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", 500);
    // The minicluster's jar has no capacity-scheduler.xml: the queues are set here. Without
    // the AM share at 100 %, a second application on a small node stays ACCEPTED.
    yarn.set("yarn.scheduler.capacity.root.queues", String.join(",", queues));
    yarn.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 1.0f);
    float share = 100.0f / queues.length;
    for (String queue : queues) {
      String prefix = "yarn.scheduler.capacity.root." + queue + ".";
      yarn.setFloat(prefix + "capacity", queue.equals(queues[0])
          ? 100.0f - share * (queues.length - 1) : share);
      yarn.setFloat(prefix + "maximum-capacity", 100.0f);
      yarn.setFloat(prefix + "user-limit-factor", queues.length);
      yarn.setFloat(prefix + "maximum-am-resource-percent", 1.0f);
      yarn.set(prefix + "state", "RUNNING");
      yarn.set(prefix + "acl_submit_applications", "*");
      yarn.set(prefix + "acl_administer_queue", "*");
    }
    yarn.setInt("yarn.scheduler.capacity.node-locality-delay", -1);

    MiniYARNCluster cluster = new MiniYARNCluster("weir", 1, nodeManagers, 1, 1);
    cluster.init(yarn);
    cluster.start();
    Configuration started = cluster.getConfig();
    // The ResourceManager's port is written into the configuration a moment after start().
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (started.get(YarnConfiguration.RM_ADDRESS, ":0").endsWith(":0")) {
      if (System.nanoTime() > deadline) {
        throw new IOException("the ResourceManager published no address within 60 s");
      }
      Thread.sleep(50);
    }
    if (!cluster.waitForNodeManagersToConnect(60_000)) {
      throw new IOException("the NodeManagers did not register within 60 s");
    }

    confDir.mkdirs();
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", dfs.getURI().toString());
    write(core, new File(confDir, "core-site.xml"));
    Configuration hdfs = new Configuration(false);
    hdfs.set("dfs.replication", "1");
    hdfs.set("dfs.namenode.http-address", started.get("dfs.namenode.http-address"));
    hdfs.set("dfs.client.block.write.replace-datanode-on-failure.policy", "NEVER");
    write(hdfs, new File(confDir, "hdfs-site.xml"));
    Configuration yarnSite = new Configuration(false);
    for (Map.Entry<String, String> entry : started) {
      if (entry.getKey().startsWith("yarn.")) {
        yarnSite.set(entry.getKey(), entry.getValue());
      }
    }
    write(yarnSite, new File(confDir, "yarn-site.xml"));

    List<String> ready = new ArrayList<>();
    ready.add("ready");
    ready.add("fs.defaultFS=" + dfs.getURI());
    ready.add("webhdfs=" + started.get("dfs.namenode.http-address"));
    ready.add("rm.address=" + started.get(YarnConfiguration.RM_ADDRESS));
    ready.add("rm.webapp=" + started.get(YarnConfiguration.RM_WEBAPP_ADDRESS));
    System.out.println(String.join("\t", ready));
    System.out.flush();

    awaitNoUsers(runDir);
    cluster.stop();
    dfs.shutdown();
    System.exit(0);
  }

  /**
   * Returns once no process uses the clusters any more: RUN_DIR/users holds a file named
   * after the pid of each process that does; files of processes that died are removed. The
   * last look happens under RUN_DIR/lock (a POSIX lock, as Python's fcntl.lockf takes it),
   * where cluster.json, which names these clusters to newcomers, is removed first: a process
   * that comes later starts clusters of its own instead of joining these.
   */
  private static void awaitNoUsers(File runDir) throws IOException, InterruptedException {
    File users = new File(runDir, "users");
    while (true) {
      Thread.sleep(1000);
      try (FileChannel channel = FileChannel.open(new File(runDir, "lock").toPath(),
              StandardOpenOption.CREATE, StandardOpenOption.WRITE);
          FileLock lock = channel.lock()) {
        File[] entries = users.listFiles();
        boolean used = false;
        for (File entry : entries == null ? new File[0] : entries) {
          boolean alive;
          try {
            alive = ProcessHandle.of(Long.parseLong(entry.getName()))
                .map(ProcessHandle::isAlive).orElse(false);
          } catch (NumberFormatException notAPid) {
            alive = false;
          }
          if (alive) {
            used = true;
          } else {
            entry.delete();
          }
        }
        if (!used) {
          new File(runDir, "cluster.json").delete();
          return;
        }
      }
    }
  }

  private static void write(Configuration conf, File file) throws IOException {
    try (OutputStream out = new FileOutputStream(file)) {
      conf.writeXml(out);
    }
  }
}
